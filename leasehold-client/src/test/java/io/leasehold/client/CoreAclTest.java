package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.core.proto.Tenure;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import io.leasehold.server.AccessSettings;
import io.leasehold.server.Certificates;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import io.leasehold.server.TlsConfig;
import io.leasehold.testkit.SuiteSettings;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Identity and access control on a real 3-node cluster over TLS, bootstrapped with a root
 * identity: clients without a certificate (anonymous: client certificates are optional here), with
 * one from another authority, or with a good one but no right are refused and change nothing; each
 * right lets exactly its calls through; a revoke takes effect; another identity can use no
 * session it did not grant; sessions per identity are limited. One cluster for the class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class CoreAclTest {

  private static final Duration VALID = Duration.ofDays(1);
  private static final Duration PATIENCE = Duration.ofSeconds(30);
  private static final String ROOT = "CN=root";
  private static final int MAX_SESSIONS = 3;

  private final List<AutoCloseable> closeLater = new ArrayList<>();
  private LocalCluster cluster;
  private Path dir;
  private CoreClient root;

  @BeforeAll
  void startCluster() throws Exception {
    dir = Files.createTempDirectory(Path.of("target"), "acl-");
    Certificates.Authority ca = Certificates.Authority.create("acl CA", VALID);
    Certificates.writeCertificates(dir.resolve("ca.pem"), ca.certificate());
    ca.issue("node", List.of("127.0.0.1", "localhost"), VALID).writeTo(dir.resolve("node.pem"), dir.resolve("node-key.pem"));
    for (String name : List.of("root", "alice", "bob", "carol", "nobody")) {
      ca.issue(name, List.of(), VALID).writeTo(dir.resolve(name + ".pem"), dir.resolve(name + "-key.pem"));
    }
    Certificates.Authority stranger = Certificates.Authority.create("another CA", VALID);
    // The root's very subject, from an authority the nodes do not trust.
    stranger.issue("root", List.of(), VALID).writeTo(dir.resolve("stranger.pem"), dir.resolve("stranger-key.pem"));
    TlsConfig tls =
        TlsConfig.of(dir.resolve("node.pem"), dir.resolve("node-key.pem"), dir.resolve("ca.pem"))
            .withClientAuth(TlsConfig.ClientAuth.OPTIONAL);
    cluster =
        LocalCluster.start(
            3, 0, dir.resolve("data"),
            c -> c.withTls(tls).withAccess(AccessSettings.DEFAULT.withRootIdentity(ROOT).withMaxSessionsPerIdentity(MAX_SESSIONS)));
    cluster.awaitLeader(PATIENCE);
    root = client("root");
    await("access control is on")
        .atMost(PATIENCE)
        .ignoreExceptions()
        .until(() -> AclCalls.list(root).get(10, TimeUnit.SECONDS).getEnabled());
    grant("CN=alice", "read", "r/");
    grant("CN=alice", "write", "w/");
    grant("CN=alice", "watch", "v/");
    grant("CN=alice", "lease", "l/");
    grant("CN=bob", "lease", "l/");
    grant("CN=carol", "lease", "c/");
    grant("CN=bob", "write", "bob/");
    awaitAppliedEverywhere();
  }

  @AfterAll
  void closeAll() throws Exception {
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private String hosts() {
    return cluster.peers().stream().map(Peer::clientEndpoint).collect(Collectors.joining(","));
  }

  private String uri(String name) {
    String ca = "leaseholds://" + hosts() + "?ca=" + dir.resolve("ca.pem");
    return name == null ? ca : ca + "&cert=" + dir.resolve(name + ".pem") + "&key=" + dir.resolve(name + "-key.pem");
  }

  private CoreClient client(String name) {
    CoreClient c = new CoreClient(CoreBackendProvider.target(uri(name)), Duration.ofSeconds(2));
    closeLater.add(c);
    return c;
  }

  private void grant(String identity, String right, String prefix) throws Exception {
    AclCalls.grant(root, AclCalls.entry(identity, io.leasehold.core.proto.AclRights.parse(right), prefix)).get(30, TimeUnit.SECONDS);
  }

  /**
   * Every node applied the ACL so far (each node's edge checks by the ACL it applied): the last
   * entry granted lets bob write under bob/ through each node.
   */
  private void awaitAppliedEverywhere() throws Exception {
    ClientTls bob = ClientTls.load(dir.resolve("ca.pem"), dir.resolve("bob.pem"), dir.resolve("bob-key.pem"));
    for (Peer peer : cluster.peers()) {
      try (CoreClient one = new CoreClient(List.of(new InetSocketAddress(peer.host(), peer.clientPort())), Duration.ofSeconds(5), bob)) {
        await("node " + peer.id() + " applied the ACL").atMost(PATIENCE).ignoreExceptions().until(() -> put(one, "bob/ready") != null);
      }
    }
  }

  /**
   * A node started with {@code --join} has no root-identity file, and its state has no ACL until
   * the cluster adds it and it applies the log: it used to serve everyone meanwhile, forwarding a
   * write of a certificate without rights to the leader. It must fail closed: nobody is served
   * until it knows (from its peers' answers) that the cluster's access control is off.
   */
  @Test
  void aNodeWaitingToJoinServesNobodyWhileItsStateHasNoAcl() throws Exception {
    TlsConfig tls =
        TlsConfig.of(dir.resolve("node.pem"), dir.resolve("node-key.pem"), dir.resolve("ca.pem"))
            .withClientAuth(TlsConfig.ClientAuth.OPTIONAL);
    Peer joining = Peer.parse("n9=127.0.0.1:" + LocalCluster.freePortPair());
    List<Peer> peers = new ArrayList<>(cluster.peers());
    peers.add(joining);
    io.leasehold.server.CoreNode node =
        io.leasehold.server.CoreNode.start(
            io.leasehold.server.NodeConfig.of(joining.id(), peers, Files.createTempDirectory(dir, "joining-"))
                .withElectionTimeout(cluster.node(0).orElseThrow().config().electionTimeout())
                .withStartMode(io.leasehold.server.NodeConfig.StartMode.JOIN)
                .withTls(tls));
    closeLater.add(node::close);
    ClientTls nobody = ClientTls.load(dir.resolve("ca.pem"), dir.resolve("nobody.pem"), dir.resolve("nobody-key.pem"));
    try (CoreClient through = new CoreClient(List.of(new InetSocketAddress(joining.host(), joining.clientPort())), Duration.ofSeconds(5), nobody)) {
      assertThatThrownBy(() -> put(through, "w/through-a-joining-node"))
          .hasMessageContaining("access control is being set up")
          .hasMessageContaining("n9 joined the cluster");
    }
    assertThat(get(root, "w/through-a-joining-node", false).getKvsCount()).as("nothing was written").isZero();
  }

  private static <T> T call(CoreClient client, BiConsumer<LeaseholdGrpc.LeaseholdStub, StreamObserver<T>> rpc) throws Exception {
    return client.call(rpc).get(30, TimeUnit.SECONDS);
  }

  private static PutResponse put(CoreClient client, String key) throws Exception {
    PutRequest put = PutRequest.newBuilder().setCall(client.newCall()).setKey(key).setValue(ByteString.copyFromUtf8("v")).build();
    return call(client, (s, o) -> s.put(put, o));
  }

  private static GetResponse get(CoreClient client, String key, boolean prefix) throws Exception {
    GetRequest get = GetRequest.newBuilder().setKey(key).setPrefix(prefix).build();
    return call(client, (s, o) -> s.get(get, o));
  }

  private static long session(CoreClient client) throws Exception {
    GrantRequest grant = GrantRequest.newBuilder().setCall(client.newCall()).setOwner("t").setTtlMillis(30_000).build();
    return CoreAclTest.<GrantResponse>call(client, (s, o) -> s.grant(grant, o)).getSessionId();
  }

  private static AcquireResponse acquire(CoreClient client, String name, String holder, long session) throws Exception {
    AcquireRequest acquire =
        AcquireRequest.newBuilder().setCall(client.newCall()).setName(name).setHolder(holder).setRequestId(1).setSessionId(session).build();
    return call(client, (s, o) -> s.acquire(acquire, o));
  }

  /** The call is refused with {@code code}, and its message says {@code mentions}. */
  private static void assertRefused(Status.Code code, ThrowingCall call, String... mentions) {
    assertThatThrownBy(call::run)
        .isInstanceOf(ExecutionException.class)
        .cause()
        .hasMessageContaining(code.name())
        .hasMessageContaining(mentions.length == 0 ? code.name() : mentions[0])
        .satisfies(e -> {
          for (String m : mentions) {
            assertThat(e.getMessage()).contains(m);
          }
        });
  }

  @FunctionalInterface
  private interface ThrowingCall {
    void run() throws Exception;
  }

  /**
   * Opens a watch; returns its error, or null if it was let in: it delivered an event of a key the
   * root writes under it (written again until one arrives, since the watch starts when the node
   * has registered it).
   */
  private Throwable watch(CoreClient client, String key, boolean prefix, boolean refused) throws Exception {
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    CompletableFuture<Void> delivered = new CompletableFuture<>();
    Runnable cancel =
        client.watch(
            WatchRequest.newBuilder().setKey(key).setPrefix(prefix).build(),
            new StreamObserver<WatchResponse>() {
              @Override
              public void onNext(WatchResponse value) {
                if (value.getEventsCount() > 0) {
                  delivered.complete(null);
                }
              }

              @Override
              public void onError(Throwable t) {
                ended.complete(t);
              }

              @Override
              public void onCompleted() {
                ended.complete(null);
              }
            });
    try {
      if (refused) {
        return ended.get(30, TimeUnit.SECONDS);
      }
      String probe = prefix ? key + "probe" : key;
      await("an event on the watch, or its end").atMost(Duration.ofSeconds(30)).until(() -> {
        put(root, probe);
        return delivered.isDone() || ended.isDone();
      });
      return delivered.isDone() ? null : ended.get();
    } finally {
      cancel.run();
    }
  }

  @Test
  void clientsWithoutACertificateFromAnotherAuthorityOrWithoutARightAreRefusedAndChangeNothing() throws Exception {
    long revision = get(root, "nothing", false).getRevision();

    CoreClient anonymous = client(null);
    assertRefused(Status.Code.PERMISSION_DENIED, () -> put(anonymous, "w/anonymous"),
        "identity \"anonymous\"", "right \"write\"", "\"w/anonymous\"");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> session(anonymous), "identity \"anonymous\"", "no right at all");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> get(anonymous, "r/", true), "right \"read\"", "prefix \"r/\"");

    CoreClient stranger = client("stranger");
    assertThatThrownBy(() -> put(stranger, "w/stranger"))
        .cause()
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("TLS handshake failed");

    CoreClient nobody = client("nobody");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> put(nobody, "w/nobody"), "identity \"CN=nobody\"", "right \"write\"", "\"w/nobody\"");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> session(nobody), "CN=nobody", "no right at all");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> AclCalls.grant(nobody, AclCalls.entry("CN=nobody", AclRight.ACL_RIGHT_ADMIN, "")).get(),
        "CN=nobody", "right \"admin\"");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<StatusResponse>call(nobody, (s, o) -> s.status(StatusRequest.getDefaultInstance(), o)),
        "right \"admin\"");
    assertRefused(Status.Code.PERMISSION_DENIED,
        () -> CoreAclTest.<io.leasehold.core.proto.SnapshotChunk>call(
            nobody, (s, o) -> s.saveSnapshot(io.leasehold.core.proto.SaveSnapshotRequest.getDefaultInstance(), o)),
        "right \"admin\"");
    assertRefused(Status.Code.PERMISSION_DENIED,
        () -> CoreAclTest.<io.leasehold.core.proto.MembersResponse>call(nobody, (s, o) -> s.addNode(
            io.leasehold.core.proto.AddNodeRequest.newBuilder().setId("n9").setAddress("127.0.0.1:1").build(), o)),
        "right \"admin\"", "add a node");
    assertRefused(Status.Code.PERMISSION_DENIED,
        () -> CoreAclTest.<io.leasehold.core.proto.MembersResponse>call(nobody, (s, o) -> s.removeNode(
            io.leasehold.core.proto.RemoveNodeRequest.newBuilder().setId("n1").build(), o)),
        "right \"admin\"", "remove a node");
    assertThat(watch(nobody, "v/", true, true)).isNotNull().hasMessageContaining("PERMISSION_DENIED");
    // A node's own status needs no right (nodes ask each other for their settings this way).
    assertThat(CoreAclTest.<StatusResponse>call(nobody, (s, o) -> s.status(StatusRequest.newBuilder().setNodeOnly(true).build(), o))
        .getNodesCount()).isEqualTo(1);

    // Nothing changed: no key written, no session, no ACL entry, the same revision.
    for (String key : List.of("w/anonymous", "w/stranger", "w/nobody")) {
      assertThat(get(root, key, false).getKvsList()).as(key).isEmpty();
    }
    assertThat(get(root, "nothing", false).getRevision()).isEqualTo(revision);
    assertThat(AclCalls.list(root).get().getEntriesList()).noneMatch(e -> e.getIdentity().equals("CN=nobody"));
  }

  @Test
  void eachRightLetsExactlyItsCallsThroughAndARevokeTakesEffect() throws Exception {
    CoreClient alice = client("alice");
    assertThat(put(alice, "w/1").getKv().getKey()).as("write on w/").isEqualTo("w/1");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> put(alice, "r/1"), "CN=alice", "right \"write\"", "\"r/1\"");
    assertThat(get(alice, "r/x", false).getKvsList()).as("read on r/").isEmpty();
    assertThat(get(alice, "r/", true).getKvsList()).as("read on the prefix r/").isEmpty();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> get(alice, "w/1", false), "right \"read\"", "\"w/1\"");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> get(alice, "", true), "right \"read\"", "prefix \"\"");
    assertThat(watch(alice, "v/", true, false)).as("watch on v/").isNull();
    assertThat(watch(alice, "r/", true, true)).as("no watch on r/").isNotNull().hasMessageContaining("right \"watch\"");
    long session = session(alice);
    assertThat(acquire(alice, "l/job", "alice#1", session).getAcquired()).as("lease on l/").isTrue();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> acquire(alice, "x/job", "alice#1", session),
        "CN=alice", "right \"lease\"", "\"x/job\"");
    assertThat(get(alice, CoreClient.LEASE_PREFIX + "l/job", false).getKvsCount()).as("its lease's key, read with lease").isEqualTo(1);
    DeleteRequest revokeLease = DeleteRequest.newBuilder().setCall(alice.newCall()).setKey(CoreClient.LEASE_PREFIX + "l/job").build();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<DeleteResponse>call(alice, (s, o) -> s.delete(revokeLease, o)),
        "right \"admin\"", "revoke the lease \"l/job\"");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> AclCalls.list(alice).get(), "right \"admin\"");

    // The revoke applies at every node as it applies the entry: soon, not at once on a lagging one.
    AclCalls.revoke(root, AclCalls.entry("CN=alice", AclRight.ACL_RIGHT_WRITE, "w/")).get(30, TimeUnit.SECONDS);
    await("the revoke takes effect")
        .atMost(PATIENCE)
        .until(() -> {
          try {
            put(alice, "w/2");
            return false;
          } catch (ExecutionException e) {
            return e.getCause().getMessage().contains("PERMISSION_DENIED");
          }
        });
  }

  @Test
  void anotherIdentityCanUseNoSessionOrTenureItDidNotGrantAndNothingChanges() throws Exception {
    CoreClient alice = client("alice");
    CoreClient bob = client("bob");
    long alices = session(alice);
    long token = acquire(alice, "l/owned", "alice#1", alices).getToken();
    long revision = get(root, "nothing", false).getRevision();

    assertRefused(Status.Code.PERMISSION_DENIED, () -> acquire(bob, "l/bobs", "bob#1", alices), "CN=bob", "session " + alices);
    PutRequest attach = PutRequest.newBuilder().setCall(bob.newCall()).setKey("bob/k").setValue(ByteString.EMPTY).setSessionId(alices).build();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<PutResponse>call(bob, (s, o) -> s.put(attach, o)), "CN=bob");
    PutRequest onTenure = PutRequest.newBuilder().setCall(bob.newCall()).setKey("k").setValue(ByteString.EMPTY)
        .setTenure(Tenure.newBuilder().setName("l/owned").setHolder("alice#1").setToken(token)).build();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<PutResponse>call(bob, (s, o) -> s.put(onTenure, o)), "CN=bob");
    ReleaseRequest release = ReleaseRequest.newBuilder().setCall(bob.newCall()).setName("l/owned").setHolder("alice#1").setToken(token).build();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<ReleaseResponse>call(bob, (s, o) -> s.release(release, o)),
        "CN=bob", "release");
    RevokeRequest close = RevokeRequest.newBuilder().setCall(bob.newCall()).setSessionId(alices).setHolderClosing(true).build();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<RevokeResponse>call(bob, (s, o) -> s.revoke(close, o)), "CN=bob");
    RevokeRequest revoke = RevokeRequest.newBuilder().setCall(bob.newCall()).setSessionId(alices).build();
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<RevokeResponse>call(bob, (s, o) -> s.revoke(revoke, o)),
        "CN=bob", "admin");
    assertThat(keepAlive("bob", alices)).isInstanceOf(io.grpc.StatusRuntimeException.class)
        .hasMessageContaining("PERMISSION_DENIED").hasMessageContaining("CN=bob").hasMessageContaining("session " + alices);
    assertThat(keepAlive("alice", alices)).as("its own keep-alive").isNull();
    // A read of the lease keys filtered to sessions: the caller's own need no right, another's do.
    GetRequest ownKeys = GetRequest.newBuilder().setKey(CoreClient.LEASE_PREFIX).setPrefix(true).setLimit(100)
        .addSessionIds(alices).build();
    assertThat(CoreAclTest.<GetResponse>call(alice, (s, o) -> s.get(ownKeys, o)).getKvsList())
        .extracting(KeyValue::getKey).containsExactly(CoreClient.LEASE_PREFIX + "l/owned");
    assertRefused(Status.Code.PERMISSION_DENIED, () -> CoreAclTest.<GetResponse>call(bob, (s, o) -> s.get(ownKeys, o)), "CN=bob");
    // At most 1000 session ids in one message, whoever asks.
    List<Long> tooMany = java.util.stream.LongStream.rangeClosed(1, 1001).boxed().toList();
    GetRequest manyIds = ownKeys.toBuilder().clearSessionIds().addAllSessionIds(tooMany).build();
    assertRefused(Status.Code.INVALID_ARGUMENT, () -> CoreAclTest.<GetResponse>call(root, (s, o) -> s.get(manyIds, o)),
        "at most 1000 sessions; was 1001");
    assertThat(keepAlive("alice", tooMany)).isInstanceOf(io.grpc.StatusRuntimeException.class)
        .hasMessageContaining("INVALID_ARGUMENT").hasMessageContaining("at most 1000 sessions; was 1001");

    // Alice's tenure, session and keys are as they were.
    GetResponse lease = get(root, CoreClient.LEASE_PREFIX + "l/owned", false);
    assertThat(lease.getKvs(0).getCreateRevision()).isEqualTo(token);
    assertThat(lease.getKvs(0).getSessionId()).isEqualTo(alices);
    assertThat(lease.getRevision()).isEqualTo(revision);
    assertThat(get(root, "bob/k", false).getKvsList()).isEmpty();
  }

  /** Sends one keep-alive for {@code session} as {@code name}; null if answered, else the error. */
  private Throwable keepAlive(String name, long session) throws Exception {
    return keepAlive(name, List.of(session));
  }

  /** Sends one keep-alive for {@code sessions} as {@code name}; null if all were extended, else the error. */
  private Throwable keepAlive(String name, List<Long> sessions) throws Exception {
    ClientTls tls = ClientTls.load(dir.resolve("ca.pem"), dir.resolve(name + ".pem"), dir.resolve(name + "-key.pem"));
    Peer peer = cluster.peers().get(cluster.leader().orElse(0));
    ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).sslContext(tls.context()).build();
    try {
      CompletableFuture<Throwable> answer = new CompletableFuture<>();
      StreamObserver<KeepAliveRequest> requests =
          LeaseholdGrpc.newStub(channel).keepAlive(new StreamObserver<KeepAliveResponse>() {
            @Override
            public void onNext(KeepAliveResponse value) {
              answer.complete(value.getAliveList().containsAll(sessions) ? null : new AssertionError("not extended: " + value));
            }

            @Override
            public void onError(Throwable t) {
              answer.complete(t);
            }

            @Override
            public void onCompleted() {}
          });
      requests.onNext(KeepAliveRequest.newBuilder().addAllSessionIds(sessions).setSequence(1).build());
      Throwable result = answer.get(30, TimeUnit.SECONDS);
      requests.onCompleted();
      return result;
    } finally {
      channel.shutdownNow();
    }
  }

  @Test
  void sessionsPerIdentityAreLimitedAndOtherIdentitiesKeepWorking() throws Exception {
    CoreClient carol = client("carol");
    for (int i = 0; i < MAX_SESSIONS; i++) {
      session(carol);
    }
    assertRefused(Status.Code.RESOURCE_EXHAUSTED, () -> session(carol),
        "max-sessions-per-identity (" + MAX_SESSIONS + ")", "CN=carol");
    assertThat(session(client("bob"))).as("another identity").isPositive();
  }

  @Test
  void theRootCannotBeRevokedAndBadEntriesAreRefusedNamingTheField() throws Exception {
    assertRefused(Status.Code.FAILED_PRECONDITION, () -> AclCalls.revoke(root, AclCalls.entry("CN=root", AclRight.ACL_RIGHT_ADMIN, "")).get(),
        "root identity \"CN=root\"", "cannot be revoked");
    AclGrantRequest unknown = AclGrantRequest.newBuilder().setCall(root.newCall())
        .setEntry(AclEntry.newBuilder().setIdentity("CN=x").setRightValue(42)).build();
    assertRefused(Status.Code.INVALID_ARGUMENT, () -> CoreAclTest.<io.leasehold.core.proto.AclGrantResponse>call(root, (s, o) -> s.aclGrant(unknown, o)), "right must be one of");
    assertRefused(Status.Code.INVALID_ARGUMENT, () -> AclCalls.grant(root, AclCalls.entry("bob", AclRight.ACL_RIGHT_READ, "")).get(),
        "identity must be a certificate subject");
    AclListResponse list = AclCalls.list(root).get(30, TimeUnit.SECONDS);
    assertThat(list.getEnabled()).isTrue();
    assertThat(list.getRootIdentity()).isEqualTo("CN=root");
    assertThat(list.getEntriesList()).contains(AclCalls.entry("CN=bob", AclRight.ACL_RIGHT_LEASE, "l/"));
  }

  @Test
  void aHolderWithOnlyTheLeaseRightUsesTheWholeLeaseApi() throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(uri("bob"))) {
      Duration ttl = Duration.ofSeconds(6);
      Lease lease = backend.newLease(SuiteSettings.forTtl("l/bob-job", "bob", ttl).operationTimeout(ttl.dividedBy(2)).build());
      assertThat(lease.acquire().get(30, TimeUnit.SECONDS)).isTrue();
      // Renewals (keep-alives), the confirm of acquire() while holding and the release all pass.
      assertThat(lease.acquire().get(30, TimeUnit.SECONDS)).isTrue();
      assertThat(lease.checkAlive()).isTrue();
      lease.release().get(30, TimeUnit.SECONDS);
      Lease forbidden = backend.newLease(SuiteSettings.forTtl("x/bob-job", "bob", ttl).operationTimeout(ttl.dividedBy(2)).build());
      assertThatThrownBy(() -> forbidden.acquire().get(30, TimeUnit.SECONDS)).hasMessageContaining("PERMISSION_DENIED");
    }
  }
}
