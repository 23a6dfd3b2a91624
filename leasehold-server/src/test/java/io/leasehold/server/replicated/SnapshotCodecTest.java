package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.server.state.SessionRecord;
import io.leasehold.server.state.SnapshotBody;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The snapshot file's header, the format it is written in, and what it refuses before loading. */
class SnapshotCodecTest {

  private static byte[] write(SnapshotBody body) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    SnapshotCodec.write(body, Formats.snapshotFormat(), out);
    return out.toByteArray();
  }

  private static SnapshotCodec.Read read(byte[] bytes) throws IOException {
    return SnapshotCodec.read(new ByteArrayInputStream(bytes), Formats.snapshotFormat());
  }

  @Test
  void aStateWithoutAccessControlIsWrittenInTheOlderFormatAndOneWithItInTheNewer() throws IOException {
    SnapshotBody plain = SnapshotBody.newBuilder().setRevision(7).build();
    SnapshotCodec.Read read = read(write(plain));
    assertThat(read.format()).isEqualTo(SnapshotCodec.SNAPSHOT_FORMAT);
    assertThat(read.body()).isEqualTo(plain);

    SnapshotBody withIdentity =
        SnapshotBody.newBuilder().addSessions(SessionRecord.newBuilder().setId(1).setIdentity("CN=alice")).build();
    assertThat(read(write(withIdentity)).format()).isEqualTo(SnapshotCodec.SNAPSHOT_FORMAT_ACL);
  }

  @Test
  void whatIsNotAWholeConsistentSnapshotIsRefusedNamingWhy() throws IOException {
    assertThatThrownBy(() -> read(new byte[] {0x4C, 0x48})).hasMessageContaining("truncated");
    assertThatThrownBy(() -> read(ByteBuffer.allocate(8).putInt(0x12345678).putInt(2).array()))
        .hasMessageContaining("not a Leasehold snapshot");
    assertThatThrownBy(() -> read(ByteBuffer.allocate(8).putInt(0x4C48534E).putInt(99).array()))
        .hasMessageContaining("99");
    assertThatThrownBy(() -> read(ByteBuffer.allocate(8).putInt(0x4C48534E).putInt(2).array()))
        .hasMessageContaining("missing");

    SnapshotBody orphanKey =
        SnapshotBody.newBuilder().addKeys(KeyValue.newBuilder().setKey("k").setSessionId(9)).build();
    assertThatThrownBy(() -> read(write(orphanKey))).hasMessageContaining("missing session 9");

    SnapshotBody entriesWithoutRoot =
        SnapshotBody.newBuilder()
            .addAclEntries(AclEntry.newBuilder().setIdentity("CN=bob").setRight(AclRight.ACL_RIGHT_READ))
            .build();
    assertThatThrownBy(() -> read(write(entriesWithoutRoot))).hasMessageContaining("no root identity");
  }
}
