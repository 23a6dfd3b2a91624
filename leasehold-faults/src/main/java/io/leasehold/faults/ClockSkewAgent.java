package io.leasehold.faults;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

/**
 * A Java agent that lets the harness skew the clock rate of a child JVM without any hook in the
 * code under test: in every class whose name starts with one of the given prefixes it redirects
 * {@code System.nanoTime()} to {@link SkewedClock#nanoTime()}, whose rate the harness changes
 * through a file. In a lease client the patched class is the API's {@code SystemTicker}, the clock
 * of the lease engine and of the backends' session send times; in a core node it is the server's
 * {@code SessionKeeper} clock (handed to it as {@code System::nanoTime}); in a ZooKeeper server it
 * is ZooKeeper's {@code Time}, which its session expiry runs on.
 *
 * <p>The patch touches only the constant pool: it appends a {@code CONSTANT_Class} for {@link
 * SkewedClock} and points the {@code Methodref} of {@code java/lang/System.nanoTime:()J} at it.
 * Call instructions, method handles ({@code System::nanoTime}) and stack maps stay as they are, so
 * nothing else in the class file moves. The JDK's own classes (thread pools, {@code parkNanos}) keep
 * the real clock: a skewed process sleeps for real durations, and only what it measures drifts.
 *
 * <p>Agent options: {@code rateFile|prefix,prefix|skipPrefix,skipPrefix} (internal names, {@code /}
 * separated). The agent jar holds only a manifest; {@link #writeJar} makes it, and the class itself
 * comes from the class path the child runs with.
 */
public final class ClockSkewAgent {

  private static final String SYSTEM = "java/lang/System";
  private static final String TARGET = SkewedClock.class.getName().replace('.', '/');
  private static final AtomicInteger PATCHED_SITES = new AtomicInteger();

  private ClockSkewAgent() {}

  /**
   * The agent's entry point.
   *
   * @param options {@code rateFile|prefixes|skipPrefixes}
   * @param inst the JVM's instrumentation
   */
  public static void premain(String options, Instrumentation inst) {
    String[] parts = options.split("\\|", -1);
    List<String> patch = List.of(parts[1].split(","));
    List<String> skip = parts.length > 2 && !parts[2].isEmpty() ? List.of(parts[2].split(",")) : List.of();
    inst.addTransformer(new ClassFileTransformer() {
      @Override
      public byte[] transform(ClassLoader loader, String className, Class<?> redefined, ProtectionDomain domain,
          byte[] bytes) {
        if (className == null || patch.stream().noneMatch(className::startsWith)
            || skip.stream().anyMatch(className::startsWith)) {
          return null;
        }
        try {
          return redirectNanoTime(bytes);
        } catch (RuntimeException e) {
          System.err.println("leasehold-faults clock: cannot patch " + className + ": " + e);
          return null;
        }
      }
    });
    SkewedClock.follow(Path.of(parts[0]), PATCHED_SITES::get);
  }

  /**
   * Writes the agent jar: a manifest naming this class, nothing else.
   *
   * @param jar where
   * @return {@code jar}
   */
  static Path writeJar(Path jar) {
    Manifest m = new Manifest();
    m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    m.getMainAttributes().put(new Attributes.Name("Premain-Class"), ClockSkewAgent.class.getName());
    try {
      new JarOutputStream(Files.newOutputStream(jar), m).close();
      return jar;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the clock agent's jar " + jar, e);
    }
  }

  /**
   * Redirects {@code System.nanoTime()} in one class file to {@link SkewedClock#nanoTime()}.
   *
   * @param bytes the class file
   * @return the patched class file, or null if it does not call {@code System.nanoTime()}
   */
  static byte[] redirectNanoTime(byte[] bytes) {
    int count = u2(bytes, 8);
    int[] offsets = new int[count];
    int[] tags = new int[count];
    int p = 10;
    for (int i = 1; i < count; i++) {
      offsets[i] = p;
      tags[i] = bytes[p] & 0xff;
      switch (tags[i]) {
        case 1 -> p += 3 + u2(bytes, p + 1);
        case 3, 4, 9, 10, 11, 12, 17, 18 -> p += 5;
        case 5, 6 -> {
          p += 9;
          i++; // a long or double takes two slots
        }
        case 7, 8, 16, 19, 20 -> p += 3;
        case 15 -> p += 4;
        default -> throw new IllegalArgumentException("unknown constant pool tag " + tags[i] + " at " + p);
      }
    }
    int end = p;
    List<Integer> sites = new ArrayList<>();
    for (int i = 1; i < count; i++) {
      if (tags[i] != 10) {
        continue;
      }
      int cls = u2(bytes, offsets[i] + 1);
      int nat = u2(bytes, offsets[i] + 3);
      if (tags[cls] == 7 && utf8(bytes, offsets, tags, u2(bytes, offsets[cls] + 1)).equals(SYSTEM)
          && tags[nat] == 12
          && utf8(bytes, offsets, tags, u2(bytes, offsets[nat] + 1)).equals("nanoTime")
          && utf8(bytes, offsets, tags, u2(bytes, offsets[nat] + 3)).equals("()J")) {
        sites.add(i);
      }
    }
    if (sites.isEmpty()) {
      return null;
    }
    byte[] copy = bytes.clone();
    int utf8Index = count;
    int classIndex = count + 1;
    for (int i : sites) {
      copy[offsets[i] + 1] = (byte) (classIndex >> 8);
      copy[offsets[i] + 2] = (byte) classIndex;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length + TARGET.length() + 8);
    try (DataOutputStream d = new DataOutputStream(out)) {
      d.write(copy, 0, 8);
      d.writeShort(count + 2);
      d.write(copy, 10, end - 10);
      d.writeByte(1);
      d.writeUTF(TARGET);
      d.writeByte(7);
      d.writeShort(utf8Index);
      d.write(copy, end, copy.length - end);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    PATCHED_SITES.addAndGet(sites.size());
    return out.toByteArray();
  }

  private static int u2(byte[] b, int at) {
    return ((b[at] & 0xff) << 8) | (b[at + 1] & 0xff);
  }

  private static String utf8(byte[] b, int[] offsets, int[] tags, int index) {
    if (index <= 0 || index >= tags.length || tags[index] != 1) {
      return "";
    }
    int at = offsets[index];
    // Class and member names here are ASCII, which modified UTF-8 spells as UTF-8 does.
    return new String(b, at + 3, u2(b, at + 1), StandardCharsets.UTF_8);
  }
}
