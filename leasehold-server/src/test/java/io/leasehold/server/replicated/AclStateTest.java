package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclRevokeRequest;
import io.leasehold.core.proto.AclRight;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Reply;
import org.junit.jupiter.api.Test;

/** The ACL's log commands on their own: who may change it, what may never be granted. */
class AclStateTest {

  private static final String ROOT = "CN=admin";
  private static final AclEntry BOB_READS = AclEntry.newBuilder().setIdentity("CN=bob").setRight(AclRight.ACL_RIGHT_READ).setPrefix("jobs/").build();

  private static AclGrantRequest grant(AclEntry entry) {
    return AclGrantRequest.newBuilder().setEntry(entry).build();
  }

  @Test
  void nothingChangesWhileAccessControlIsOffAndOnlyTheFirstInitCounts() {
    AclState acl = new AclState();
    Reply refused = acl.grant(grant(BOB_READS), ROOT);
    assertThat(refused.getFailure().getMessage()).isEqualTo(AclTable.ACCESS_CONTROL_OFF);
    assertThat(acl.table().entries()).isEmpty();

    acl.init(ROOT);
    acl.init("CN=other");
    assertThat(acl.table().root()).isEqualTo(ROOT);
  }

  @Test
  void onlyAnAdminChangesItAndTheRootIsNeverAnEntry() {
    AclState acl = new AclState();
    acl.init(ROOT);
    assertThat(acl.grant(grant(BOB_READS), "CN=bob").getFailure().getCode()).isEqualTo(Failure.Code.PERMISSION_DENIED);
    assertThat(acl.table().entries()).isEmpty();

    assertThat(acl.grant(grant(BOB_READS), ROOT).hasOk()).isTrue();
    assertThat(acl.table().allows("CN=bob", AclRight.ACL_RIGHT_READ, "jobs/x")).isTrue();

    AclEntry rootEntry = BOB_READS.toBuilder().setIdentity(ROOT).build();
    assertThat(acl.grant(grant(rootEntry), ROOT).getFailure().getMessage()).contains("root identity");
    AclEntry adminWithPrefix = BOB_READS.toBuilder().setRight(AclRight.ACL_RIGHT_ADMIN).build();
    assertThat(acl.grant(grant(adminWithPrefix), ROOT).getFailure().getMessage()).contains("prefix must be empty");

    assertThat(acl.revoke(AclRevokeRequest.newBuilder().setEntry(BOB_READS).build(), ROOT).hasOk()).isTrue();
    assertThat(acl.table().entries()).isEmpty();
    assertThat(acl.list().getRootIdentity()).isEqualTo(ROOT);
  }
}
