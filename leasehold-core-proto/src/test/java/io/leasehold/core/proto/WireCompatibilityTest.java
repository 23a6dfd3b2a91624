package io.leasehold.core.proto;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The wire protocol only grows (docs/compatibility.md): every RPC, field and enum value of
 * {@code leasehold/v1/leasehold.proto} as the last release had it is still there, with the same
 * number, type and streaming. New ones are free. The released protocol is the resource
 * {@code leasehold-v1.wire}, one line per element; a release appends what it added.
 */
@Timeout(10)
class WireCompatibilityTest {

  /** One line per RPC, field and enum value of the file, sorted. */
  static Set<String> describe(FileDescriptor file) {
    Set<String> lines = new TreeSet<>();
    for (ServiceDescriptor service : file.getServices()) {
      for (MethodDescriptor m : service.getMethods()) {
        String in = (m.isClientStreaming() ? "stream " : "") + m.getInputType().getFullName();
        String out = (m.isServerStreaming() ? "stream " : "") + m.getOutputType().getFullName();
        lines.add("rpc " + service.getFullName() + "." + m.getName() + "(" + in + ") returns (" + out + ")");
      }
    }
    List<Descriptor> messages = new ArrayList<>(file.getMessageTypes());
    List<EnumDescriptor> enums = new ArrayList<>(file.getEnumTypes());
    for (int i = 0; i < messages.size(); i++) {
      Descriptor message = messages.get(i);
      messages.addAll(message.getNestedTypes());
      enums.addAll(message.getEnumTypes());
      for (FieldDescriptor f : message.getFields()) {
        String type =
            switch (f.getJavaType()) {
              case MESSAGE -> f.getMessageType().getFullName();
              case ENUM -> f.getEnumType().getFullName();
              default -> f.getType().name().toLowerCase(Locale.ROOT);
            };
        String label = f.isRepeated() ? "repeated " : "";
        lines.add(
            "field " + message.getFullName() + " " + f.getNumber() + " " + label + type + " " + f.getName());
      }
    }
    for (EnumDescriptor e : enums) {
      for (EnumValueDescriptor v : e.getValues()) {
        lines.add("enum " + e.getFullName() + " " + v.getNumber() + " " + v.getName());
      }
    }
    return lines;
  }

  @Test
  void everythingTheReleasedProtocolHadIsStillThereUnchanged() throws IOException {
    Set<String> released = new LinkedHashSet<>();
    try (InputStream in = WireCompatibilityTest.class.getResourceAsStream("leasehold-v1.wire")) {
      assertThat(in).as("leasehold-v1.wire next to this test").isNotNull();
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (!line.isBlank() && !line.startsWith("#")) {
          released.add(line.strip());
        }
      }
    }
    Set<String> missing = new TreeSet<>(released);
    missing.removeAll(describe(LeaseholdProto.getDescriptor()));

    assertThat(released).as("the released protocol file lists the protocol").isNotEmpty();
    assertThat(missing)
        .as("leasehold.proto may only add (docs/compatibility.md): these released RPCs, fields or"
            + " enum values were removed, renumbered or changed")
        .isEmpty();
  }
}
