package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.server.state.SnapshotBody;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The sessions table on its own: ids, the counts kept over it, the quiet mark, the snapshot form. */
class SessionTableTest {

  @Test
  void idsIncreaseEvenWithinOneEntry() {
    SessionTable table = new SessionTable();
    assertThat(table.nextId(10)).isEqualTo(10);
    assertThat(table.nextId(10)).as("a second grant of the same entry").isEqualTo(11);
    assertThat(table.nextId(5)).as("never back").isEqualTo(12);
  }

  @Test
  void sessionsPerIdentityAndQuietSessionsAreCountedThroughAddMarkHeardAndRemove() {
    SessionTable table = new SessionTable();
    table.add(new Session(table.nextId(1), "a", 1_000, "CN=alice"));
    table.add(new Session(table.nextId(2), "b", 2_000, "CN=alice"));
    table.add(new Session(table.nextId(3), "c", 3_000, ""));
    assertThat(table.countOf("CN=alice")).isEqualTo(2);

    table.heard(3, 50); // confirmed after the mark below was decided: stays heard
    table.markQuiet(2, 40);
    assertThat(table.quietSince()).isEqualTo(Map.of(1L, 40L, 2L, 40L));
    table.markQuiet(3, 60);
    assertThat(table.quietSince()).as("an earlier mark is kept").containsEntry(1L, 40L).containsEntry(3L, 60L);

    table.heard(1, 70);
    table.remove(2);
    table.remove(3);
    assertThat(table.hasQuiet()).isFalse();
    assertThat(table.countOf("CN=alice")).isEqualTo(1);
    assertThat(table.remove(3)).as("already gone").isNull();
  }

  @Test
  void aSnapshotRestoresTheSessionsAndTheirCounts() {
    SessionTable table = new SessionTable();
    table.add(new Session(table.nextId(4), "a", 1_000, "CN=alice"));
    table.add(new Session(table.nextId(4), "b", 2_000, ""));
    table.markQuiet(4, 10);
    table.heard(5, 20);
    SnapshotBody.Builder body = SnapshotBody.newBuilder();
    table.writeTo(body);

    SessionTable read = new SessionTable();
    read.readFrom(body.getSessionsList(), body.getLastSessionId());
    assertThat(read.lastId()).isEqualTo(5);
    assertThat(read.ttls()).containsExactly(Map.entry(4L, 1_000L), Map.entry(5L, 2_000L));
    assertThat(read.quietSince()).isEqualTo(Map.of(4L, 10L));
    assertThat(read.countOf("CN=alice")).isEqualTo(1);
    assertThat(read.get(5).heardAt).isEqualTo(20);
    SnapshotBody.Builder again = SnapshotBody.newBuilder();
    read.writeTo(again);
    assertThat(again.build()).as("written back the same").isEqualTo(body.build());
  }
}
