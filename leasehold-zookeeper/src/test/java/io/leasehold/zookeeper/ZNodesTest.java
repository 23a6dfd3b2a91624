package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.HolderId;
import io.leasehold.zookeeper.ZNodes.HolderRecord;
import io.leasehold.zookeeper.ZNodes.TenureRecord;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.common.PathUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class ZNodesTest {

  @Test
  void leaseNamesMapToValidDistinctZnodeNames() {
    List<String> names = List.of(
        "orders", "a.b", "a%2Eb", "a%2eb", ".", "..", "a/b", "a%2Fb", "Ünïcode ✓", "with space",
        "x".repeat(256), "zookeeper", "UPPER", "upper", "tab-like\u00a0nbsp", "emoji 😀");
    Set<String> encoded = new HashSet<>();
    for (String name : names) {
      String node = ZNodes.encode(name);
      assertThat(node).doesNotContain("/").isNotIn(".", "..");
      PathUtils.validatePath(ZNodes.holderNode(name)); // throws if ZooKeeper would refuse it
      encoded.add(node);
    }
    assertThat(encoded).as("one znode name per lease name").hasSameSizeAs(names);
    assertThat(ZNodes.encode("orders-compactor_2")).isEqualTo("orders-compactor_2");
    assertThat(ZNodes.encode("a.b")).isEqualTo("a%2Eb");
  }

  @Test
  void holderRecordsRoundTripAndForeignDataIsNotOne() {
    HolderRecord r = new HolderRecord(HolderId.parse("node=1#0123456789abcdef"), 42, 7);
    assertThat(HolderRecord.parse(r.toBytes())).hasValue(r);
    assertThat(HolderRecord.parse("some other tool's lock".getBytes(StandardCharsets.UTF_8))).isEmpty();
    assertThat(HolderRecord.parse(null)).isEmpty();
    assertThat(HolderRecord.parse("holder=x#1\nrequest=1\ngeneration=1\n".getBytes(StandardCharsets.UTF_8)))
        .as("an invalid holder id")
        .isEmpty();
  }

  @Test
  void tenureRecordsRoundTripAndALeaseNameIsNone() {
    TenureRecord r = new TenureRecord(HolderId.parse("node=1#0123456789abcdef"), 0xfedcba9876543210L, 15_000);
    assertThat(TenureRecord.parse(r.toBytes())).hasValue(r);
    assertThat(TenureRecord.parse(ZNodes.noTenure("orders"))).as("a released lease node").isEmpty();
    assertThat(TenureRecord.parse(ZNodes.noTenure("leasehold-tenure")))
        .as("a lease named like the record's first line")
        .isEmpty();
    assertThat(TenureRecord.parse(null)).isEmpty();
    assertThat(ZNodes.sessionNode(0x1000014b37c0000L)).isEqualTo("/leasehold/sessions/01000014b37c0000");
  }

  @Test
  void aReleasedLeaseNodeNamesTheTenureAndRecordsNone() {
    byte[] data = ZNodes.released("orders", "node-1#0123456789abcdef", 42);
    assertThat(ZNodes.Released.parse(data)).hasValue(new ZNodes.Released("node-1#0123456789abcdef", 42));
    assertThat(TenureRecord.parse(data)).as("no tenure recorded").isEmpty();
    assertThat(ZNodes.Released.parse(ZNodes.noTenure("orders"))).isEmpty();
    assertThat(ZNodes.Released.parse(null)).isEmpty();
  }
}
