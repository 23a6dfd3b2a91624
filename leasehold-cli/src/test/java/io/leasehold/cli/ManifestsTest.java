package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.leasehold.client.CoreBackendProvider;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.NodeConfig.StartMode;
import io.leasehold.server.Peer;
import io.leasehold.server.TlsConfig;
import io.leasehold.server.http.StatusHttpServer;
import io.leasehold.spi.SecretFiles;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;
import picocli.CommandLine.ParseResult;

/**
 * The Kubernetes manifests (deploy/kubernetes/) and the image (deploy/docker/Dockerfile), checked
 * without a cluster. Every manifest is parsed; the StatefulSet's entrypoint is
 * run as a pod would run it — its environment built from the manifest as the kubelet builds it, a
 * stub {@code java} that prints its command line and a stub {@code getent} on the PATH — for every
 * ordinal; the command line it makes is parsed by the real {@code leasehold server} (picocli, then
 * {@link ServerCommand#config()}, the checks made before a node starts); and what that node would
 * listen on and write to is compared with the container's ports, mounts and probes, the Services,
 * the disruption budget and the image.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class ManifestsTest {

  private static final Path KUBERNETES = Path.of("../deploy/kubernetes");
  private static final Path CORE = KUBERNETES.resolve("core");
  private static final Path APP_RBAC = KUBERNETES.resolve("app-rbac");
  private static final Path ADMIN = KUBERNETES.resolve("admin");
  private static final Path DOCKERFILE = Path.of("../deploy/docker/Dockerfile");

  /** The namespace the pods are pretended to run in (the manifests name none: `kubectl -n`). */
  private static final String NAMESPACE = "prod";

  private static final String BOOTSTRAP_CONFIG_MAP = "leasehold-bootstrap";

  /** The Secret the nodes' certificate is in (docs/deploy-kubernetes.md; cert-manager writes it). */
  private static final String TLS_SECRET = "leasehold-core-tls";

  /** The root identity a new cluster is made with (docs/deploy-kubernetes.md). */
  private static final String ROOT_IDENTITY = "CN=leasehold-admin";

  /** The Secret of the admin pod's client certificate, whose subject is {@link #ROOT_IDENTITY}. */
  private static final String ADMIN_SECRET = "leasehold-admin-tls";

  /** The keys of a Secret that cert-manager's Certificate writes: the authority, the certificate, its key. */
  private static final List<String> TLS_SECRET_KEYS = List.of("ca.crt", "tls.crt", "tls.key");

  private static final Map<String, String> API_VERSIONS =
      Map.of(
          "StatefulSet", "apps/v1",
          "Service", "v1",
          "ServiceAccount", "v1",
          "ConfigMap", "v1",
          "Pod", "v1",
          "NetworkPolicy", "networking.k8s.io/v1",
          "PodDisruptionBudget", "policy/v1",
          "Role", "rbac.authorization.k8s.io/v1",
          "RoleBinding", "rbac.authorization.k8s.io/v1");

  @TempDir Path tmp;

  /** The namespace the pods run in for this test: {@link #NAMESPACE} unless a test says otherwise. */
  private String namespace = NAMESPACE;

  /** The keys of the TLS Secret the kubelet finds (cert-manager's shape unless a test drops one). */
  private final Set<String> secretKeys = new LinkedHashSet<>(TLS_SECRET_KEYS);

  private List<Map<String, Object>> core;
  private Map<String, Object> statefulSet;
  private Map<String, Object> podSpec;
  private Map<String, Object> container;

  @BeforeEach
  void load() throws IOException {
    core = manifests(CORE);
    statefulSet = only(core, "StatefulSet");
    podSpec = mapAt(statefulSet, "spec.template.spec");
    List<Object> containers = listAt(podSpec, "containers");
    assertThat(containers).as("the StatefulSet's containers").hasSize(1);
    container = map(containers.get(0), "the container");
  }

  @Test
  void everyManifestIsAnObjectOfAStableApiWithANameAndNoNamespace() throws IOException {
    List<Map<String, Object>> all = new ArrayList<>(core);
    all.addAll(manifests(APP_RBAC));
    all.addAll(manifests(ADMIN));
    Set<String> seen = new HashSet<>();
    for (Map<String, Object> doc : all) {
      String kind = str(doc, "kind");
      String name = str(doc, "metadata.name");
      assertThat(API_VERSIONS).as("kinds these manifests may hold").containsKey(kind);
      assertThat(str(doc, "apiVersion")).as("apiVersion of %s %s", kind, name).isEqualTo(API_VERSIONS.get(kind));
      assertThat(name).as("name of a %s", kind).matches("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
      assertThat(mapAt(doc, "metadata")).as("%s %s: the namespace comes from kubectl -n", kind, name)
          .doesNotContainKey("namespace");
      assertThat(seen.add(kind + "/" + name)).as("%s %s defined twice", kind, name).isTrue();
    }
    assertThat(core).extracting(d -> d.get("kind"))
        .containsExactlyInAnyOrder("ServiceAccount", "StatefulSet", "Service", "Service", "PodDisruptionBudget", "NetworkPolicy");
  }

  @Test
  void eachPodRunsTheNodeNamedAfterItAndEveryPodListsTheSamePeers() throws Exception {
    int replicas = intAt(statefulSet, "spec.replicas");
    String set = str(statefulSet, "metadata.name");
    String governing = str(statefulSet, "spec.serviceName");
    List<String> ids = IntStream.range(0, replicas).mapToObj(i -> set + "-" + i).toList();
    List<Peer> firstPeers = null;
    for (String pod : ids) {
      Entrypoint run = runEntrypoint(pod, null);
      ServerLine line = run.serverLine();
      assertThat(line.config.self()).as("--id of pod %s", pod).isEqualTo(pod);
      assertThat(line.config.peers()).as("--peers of pod %s", pod).extracting(Peer::id).containsExactlyElementsOf(ids);
      assertThat(line.config.peers()).as("--peers of pod %s: each pod's stable DNS name under the governing Service", pod)
          .extracting(Peer::host)
          .containsExactlyElementsOf(ids.stream().map(id -> id + "." + governing + "." + NAMESPACE + ".svc.cluster.local").toList());
      if (firstPeers == null) {
        firstPeers = line.config.peers();
      } else {
        assertThat(line.config.peers()).as("--peers of pod %s, against pod %s", pod, ids.get(0)).isEqualTo(firstPeers);
      }
      assertThat(run.resolved).as("names the entrypoint waited for").containsExactly(line.config.selfPeer().host());
    }
  }

  @Test
  void theContainerDeclaresEveryPortTheNodeListensOnAndTheServicesTargetThem() throws Exception {
    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    Peer self = line.config.selfPeer();
    assertThat(line.config.peers()).extracting(Peer::clientPort).containsOnly(self.clientPort());
    Map<String, Integer> ports = containerPorts();
    assertThat(ports.get("client")).as("container port 'client' = the port in --peers").isEqualTo(self.clientPort());
    assertThat(ports.get("raft")).as("container port 'raft' = the port in --peers + 1").isEqualTo(self.raftPort());
    assertThat(ports.get("http")).as("container port 'http' = --http-port").isEqualTo(line.httpPort);
    assertThat(ports.values()).as("the container's ports: exactly the node's").containsExactlyInAnyOrder(
        self.clientPort(), self.raftPort(), line.httpPort);

    Map<String, Object> labels = mapAt(statefulSet, "spec.template.metadata.labels");
    List<Map<String, Object>> services = all(core, "Service");
    for (Map<String, Object> service : services) {
      String name = str(service, "metadata.name");
      assertThat(labels).as("pod labels, against Service %s's selector", name).containsAllEntriesOf(mapAt(service, "spec.selector"));
      for (Object p : listAt(service, "spec.ports")) {
        Object target = map(p, "a port of Service " + name).get("targetPort");
        assertThat(ports.values()).as("Service %s's targetPort %s", name, target).contains(containerPort(target));
      }
    }
    Map<String, Object> headless = named(services, str(statefulSet, "spec.serviceName"));
    assertThat(mapAt(headless, "spec").get("clusterIP")).as("the governing Service is headless").isEqualTo("None");
    assertThat(mapAt(headless, "spec").get("publishNotReadyAddresses"))
        .as("nodes reach each other before they are ready").isEqualTo(true);
    assertThat(targets(headless)).as("the governing Service's targets").contains(self.clientPort(), self.raftPort());
    List<Map<String, Object>> forClients = services.stream().filter(s -> s != headless).toList();
    assertThat(forClients).as("a client Service").hasSize(1);
    assertThat(targets(forClients.get(0))).as("the client Service's targets").containsExactly(self.clientPort());
  }

  @Test
  void theDataDirectoryIsOnThePersistentVolumeAndTheRestOfTheFileSystemIsReadOnly() throws Exception {
    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-1", null).serverLine();
    assertThat(mapAt(container, "securityContext").get("readOnlyRootFilesystem")).isEqualTo(true);
    Set<String> claims = new HashSet<>();
    for (Object t : listAt(statefulSet, "spec.volumeClaimTemplates")) {
      claims.add(str(map(t, "a volumeClaimTemplate"), "metadata.name"));
    }
    Map<String, Object> dataMount = mountOf(line.dataDir);
    assertThat(claims).as("--data-dir %s is on the volume %s", line.dataDir, dataMount.get("name")).contains((String) dataMount.get("name"));
    // One level below the volume's root, not the root itself: a new volume's root holds
    // lost+found, and --bootstrap formats only a missing or empty directory.
    assertThat(Path.of((String) dataMount.get("mountPath")).relativize(Path.of(line.dataDir)).getNameCount())
        .as("--data-dir %s below mount %s", line.dataDir, dataMount.get("mountPath")).isEqualTo(1);
    // The other places the JVM writes need a writable mount too: java.io.tmpdir (/tmp in the
    // image; gRPC unpacks its native transport there) and the crash log.
    mountOf("/tmp");
    for (String option : line.jvmOptions) {
      if (option.startsWith("-XX:ErrorFile=")) {
        mountOf(option.substring("-XX:ErrorFile=".length()));
      }
      assertThat(option).as("JVM options: java.io.tmpdir stays /tmp").doesNotStartWith("-Djava.io.tmpdir");
    }
  }

  @Test
  void onlyAnAllowedFirstStartOnAnEmptyDirectoryBootstraps() throws Exception {
    String pod = str(statefulSet, "metadata.name") + "-2";
    assertThat(core).as("the ConfigMap that allows formatting is the operator's, made for the first start only;"
            + " in the manifests, every re-apply would allow it again")
        .noneMatch(d -> d.get("kind").equals("ConfigMap") && str(d, "metadata.name").equals(BOOTSTRAP_CONFIG_MAP));

    assertThat(runEntrypoint(pod, null).serverLine().config.startMode()).as("no ConfigMap, no data").isEqualTo(StartMode.RECOVER);
    assertThat(runEntrypoint(pod, "yes").serverLine().config.startMode()).as("allowed, no directory").isEqualTo(StartMode.BOOTSTRAP);

    Files.createDirectories(dataDirOnDisk());
    assertThat(runEntrypoint(pod, "yes").serverLine().config.startMode()).as("allowed, empty directory").isEqualTo(StartMode.BOOTSTRAP);

    Files.writeString(dataDirOnDisk().resolve("raft-meta"), "data");
    assertThat(runEntrypoint(pod, "yes").serverLine().config.startMode()).as("allowed, data there").isEqualTo(StartMode.RECOVER);
    assertThat(runEntrypoint(pod, null).serverLine().config.startMode()).as("not allowed, data there").isEqualTo(StartMode.RECOVER);

    Entrypoint typo = runEntrypoint(pod, "true");
    assertThat(typo.status).as("a value other than yes; stderr: %s", typo.err).isEqualTo(2);
    assertThat(typo.err).contains(BOOTSTRAP_CONFIG_MAP).contains("\"true\"");
    assertThat(typo.javaArgs).as("java not started").isEmpty();
  }

  @Test
  void theNodesSpeakTlsWithTheFilesOfTheSecretTheyMount() throws Exception {
    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    assertThat(line.config.tls()).as("TLS, by default").isNotNull();
    assertThat(line.config.tls().clientAuth()).as("clients must show a certificate").isEqualTo(TlsConfig.ClientAuth.REQUIRE);
    // The flags name the keys of cert-manager's Secret, in the directory a Secret volume is mounted at.
    Map<String, String> keyOf = Map.of("--tls-cert", "tls.crt", "--tls-key", "tls.key", "--tls-ca", "ca.crt");
    assertThat(line.tlsFiles).as("the TLS flags").containsOnlyKeys(keyOf.keySet());
    Map<String, Object> mount = null;
    for (Map.Entry<String, String> flag : line.tlsFiles.entrySet()) {
      Path file = Path.of(flag.getValue());
      assertThat(file.getFileName()).as("%s names the Secret's key", flag.getKey()).hasToString(keyOf.get(flag.getKey()));
      Map<String, Object> at = secretMountAt(file.getParent().toString());
      assertThat(mount == null || mount == at).as("%s: the three files in one Secret's mount", flag.getKey()).isTrue();
      mount = at;
    }
    assertThat(mount.get("readOnly")).as("the Secret's mount is read-only").isEqualTo(true);
    assertThat(mount).as("a whole Secret, not a subPath: the kubelet updates only whole Secret mounts, and the"
        + " node re-reads changed files").doesNotContainKey("subPath");
    Map<String, Object> secret = mapAt(volume(str(mount, "name")), "secret");
    assertThat(secret.get("secretName")).as("the Secret the docs and the cert-manager example name").isEqualTo(TLS_SECRET);
    assertThat(secret.get("optional")).as("without the Secret the pod waits: it never starts without TLS")
        .isIn(null, false);
    assertThat(secret).as("every key of the Secret, by its own name").doesNotContainKey("items");
  }

  /**
   * The mode the kubelet gives the key file (a Secret volume's files are root's; with an fsGroup
   * their group is it and they are made group-readable, 0440 on a read-only volume), judged by the
   * node's own check, {@code SecretFiles} (leasehold-spi), that a key file is its owner's only.
   */
  @Test
  void theKeyFileIsTheOwnersOnlyAsTheNodeChecksAndTheNodeCanReadIt() throws Exception {
    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    Path key = Path.of(line.tlsFiles.get("--tls-key"));
    assertKeyIsOwnerOnlyAndReadable(podSpec, mapAt(volume(str(secretMountAt(key.getParent().toString()), "name")), "secret"), key);
  }

  /** Judges a key file of a Secret volume as the kubelet makes it and the node or client checks it. */
  private static void assertKeyIsOwnerOnlyAndReadable(Map<String, Object> podSpec, Map<String, Object> secret, Path key)
      throws ReflectiveOperationException {
    Object defaultMode = secret.getOrDefault("defaultMode", 0644);
    assertThat(defaultMode).as("defaultMode (YAML 0400 is octal, 256)").isInstanceOf(Integer.class);
    Map<String, Object> pod = mapAt(podSpec, "securityContext");
    Object fsGroup = pod.get("fsGroup");
    assertThat(fsGroup).as("fsGroup: without it the Secret's files are root's alone, and user %s cannot read %s",
        pod.get("runAsUser"), key).isNotNull();
    assertThat(pod.get("runAsUser")).as("the process runs as another user than root, the files' owner").isNotEqualTo(0);
    int mode = (Integer) defaultMode | 0440; // kubelet: group fsGroup, g+r (read-only volume)
    Set<PosixFilePermission> kubelet = permissions(mode);
    assertThat(ownerOnlyProblem(kubelet, true, key)).as("the check of key file %s, mode %s, root's, group %s",
        key, PosixFilePermissions.toString(kubelet), fsGroup).isNull();
    // The check is the one that refuses what it should (so that null above means something).
    assertThat(ownerOnlyProblem(permissions(0644), true, key)).as("Kubernetes' default mode 0644").isNotNull();
    // Read through the group fsGroup, which the kubelet adds to the container's groups.
    assertThat(kubelet).as("the group may read %s", key).contains(PosixFilePermission.GROUP_READ);
  }

  @Test
  void withoutEveryFileOfTheSecretTheNodeDoesNotStartAndPlaintextMustBeAskedFor() throws Exception {
    String pod = str(statefulSet, "metadata.name") + "-1";
    for (String missing : TLS_SECRET_KEYS) {
      secretKeys.clear();
      secretKeys.addAll(TLS_SECRET_KEYS);
      secretKeys.remove(missing);
      Entrypoint run = runEntrypoint(pod, null);
      assertThat(run.status).as("without %s; stderr: %s", missing, run.err).isEqualTo(2);
      assertThat(run.err).as("names the file and the Secret").contains(missing).contains(TLS_SECRET);
      assertThat(run.javaArgs).as("java not started").isEmpty();
    }
    secretKeys.clear();
    Entrypoint plaintext = runEntrypoint(pod, "yes", Map.of("LEASEHOLD_TLS", "off"));
    ServerLine line = plaintext.serverLine();
    assertThat(line.config.tls()).as("LEASEHOLD_TLS=off").isNull();
    assertThat(line.tlsFiles).isEmpty();
    assertThat(line.config.access().rootIdentity()).as("no root identity without TLS (the server refuses one)").isNull();
    assertThat(plaintext.err).contains("plaintext");

    Entrypoint typo = runEntrypoint(pod, null, Map.of("LEASEHOLD_TLS", "true"));
    assertThat(typo.status).as("LEASEHOLD_TLS neither on nor off; stderr: %s", typo.err).isEqualTo(2);
    assertThat(typo.err).contains("LEASEHOLD_TLS").contains("\"true\"");
    assertThat(typo.javaArgs).as("java not started").isEmpty();
  }

  @Test
  void aNewClusterTurnsAccessControlOnWithTheDocumentedRootIdentity() throws Exception {
    String pod = str(statefulSet, "metadata.name") + "-2";
    String root = envValue("LEASEHOLD_ROOT_IDENTITY");
    assertThat(root).as("the root identity the docs and the cert-manager example's admin certificate name").isEqualTo(ROOT_IDENTITY);
    NodeConfig bootstrap = runEntrypoint(pod, "yes").serverLine().config;
    assertThat(bootstrap.startMode()).isEqualTo(StartMode.BOOTSTRAP);
    assertThat(bootstrap.access().rootIdentity()).as("--root-identity at the first start").isEqualTo(ROOT_IDENTITY);
    Files.createDirectories(dataDirOnDisk());
    Files.writeString(dataDirOnDisk().resolve("raft-meta"), "data");
    NodeConfig later = runEntrypoint(pod, null).serverLine().config;
    assertThat(later.access().rootIdentity()).as("no --root-identity on later starts (the log holds it)").isNull();
    NodeConfig off = runEntrypoint(pod, "yes", Map.of("LEASEHOLD_ROOT_IDENTITY", "")).serverLine().config;
    assertThat(off.access().rootIdentity()).as("LEASEHOLD_ROOT_IDENTITY empty: access control off").isNull();
  }

  @Test
  void theAdminPodReachesEveryNodeOverTlsAsTheRootIdentity() throws Exception {
    Map<String, Object> admin = only(manifests(ADMIN), "Pod");
    Map<String, Object> spec = mapAt(admin, "spec");
    List<Object> containers = listAt(spec, "containers");
    assertThat(containers).hasSize(1);
    Map<String, Object> own = map(containers.get(0), "the admin pod's container");
    assertThat(own.get("image")).as("the core's image").isEqualTo(container.get("image"));
    Map<String, Object> labels = mapAt(admin, "metadata.labels");
    assertThat(labels.entrySet().containsAll(mapAt(statefulSet, "spec.selector.matchLabels").entrySet()))
        .as("the admin pod's labels %s: not a core pod's (the Services and the budget must not pick it)", labels).isFalse();

    // $LEASEHOLD_BACKEND as the kubelet expands it: the nodes as --peers names them, over TLS.
    Map<String, String> env = new LinkedHashMap<>();
    for (Object e : listAt(own, "env")) {
      Map<String, Object> var = map(e, "an env entry");
      if (var.containsKey("valueFrom")) {
        assertThat(str(var, "valueFrom.fieldRef.fieldPath")).isEqualTo("metadata.namespace");
        env.put(str(var, "name"), NAMESPACE);
      } else {
        env.put(str(var, "name"), expand(str(var, "value"), env));
      }
    }
    String uri = env.get("LEASEHOLD_BACKEND");
    assertThat(uri).as("$LEASEHOLD_BACKEND, which every command reads").startsWith("leaseholds://");
    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    assertThat(CoreBackendProvider.endpoints(uri)).as("the URI's nodes: --peers's, so a leader hint is followed")
        .extracting(a -> a.getHostString() + ":" + a.getPort())
        .containsExactlyElementsOf(line.config.peers().stream().map(p -> p.host() + ":" + p.clientPort()).toList());
    Map<String, String> files = new LinkedHashMap<>();
    for (String parameter : uri.substring(uri.indexOf('?') + 1).split("&")) {
      String[] kv = parameter.split("=", 2);
      files.put(kv[0], kv[1]);
    }
    assertThat(files).as("the URI's files").containsOnlyKeys("ca", "cert", "key");
    Map<String, Object> mount = null;
    for (Object m : listAt(own, "volumeMounts")) {
      Map<String, Object> candidate = map(m, "a volume mount");
      if (Path.of(files.get("key")).getParent().equals(Path.of(str(candidate, "mountPath")))) {
        mount = candidate;
      }
    }
    assertThat(mount).as("a mount at the directory of key=%s", files.get("key")).isNotNull();
    assertThat(files).as("cert-manager's keys in that mount").containsEntry("ca", str(mount, "mountPath") + "/ca.crt")
        .containsEntry("cert", str(mount, "mountPath") + "/tls.crt").containsEntry("key", str(mount, "mountPath") + "/tls.key");
    Map<String, Object> secret = null;
    for (Object v : listAt(spec, "volumes")) {
      Map<String, Object> volume = map(v, "a volume");
      if (volume.get("name").equals(mount.get("name"))) {
        secret = mapAt(volume, "secret");
      }
    }
    assertThat(secret).as("the volume at %s is a Secret", mount.get("mountPath")).isNotNull();
    assertThat(secret.get("secretName")).isEqualTo(ADMIN_SECRET);
    assertKeyIsOwnerOnlyAndReadable(spec, secret, Path.of(files.get("key")));
    assertThat(mapAt(own, "securityContext").get("readOnlyRootFilesystem")).isEqualTo(true);
    assertThat(listAt(own, "volumeMounts")).as("a writable /tmp (the JVM's, and backups)")
        .anyMatch(m -> "/tmp".equals(map(m, "a mount").get("mountPath")));
    assertThat(mapAt(spec, "securityContext").get("runAsUser")).as("the image's user").isEqualTo(dockerfile().uid);
  }

  @Test
  void theNetworkPolicyAdmitsEachPortOnlyFromWhomItServes() throws Exception {
    Map<String, Object> policy = only(core, "NetworkPolicy");
    Map<String, Object> labels = mapAt(statefulSet, "spec.template.metadata.labels");
    Map<String, Object> selector = mapAt(policy, "spec.podSelector.matchLabels");
    assertThat(selector).as("the policy's pod selector").isNotEmpty();
    assertThat(labels).as("pod labels, against the policy's selector").containsAllEntriesOf(selector);
    assertThat(listAt(policy, "spec.policyTypes")).as("ingress denied but for the rules").containsExactly("Ingress");
    Map<String, Object> clientLabel = Map.of("leasehold.io/client", "true");
    Map<String, Object> monitoringLabel = Map.of("leasehold.io/monitoring", "true");
    Map<Integer, List<Map<String, Object>>> from = new HashMap<>();
    for (Object r : listAt(policy, "spec.ingress")) {
      Map<String, Object> rule = map(r, "an ingress rule");
      // A rule without "from", or with an empty one, admits every source.
      assertThat(listAt(rule, "from")).as("a rule's sources").isNotEmpty();
      for (Object p : listAt(rule, "ports")) {
        Map<String, Object> port = map(p, "a rule's port");
        assertThat(port.getOrDefault("protocol", "TCP")).isEqualTo("TCP");
        assertThat(port).doesNotContainKey("endPort");
        List<Map<String, Object>> peers = from.computeIfAbsent(containerPort(port.get("port")), k -> new ArrayList<>());
        for (Object f : listAt(rule, "from")) {
          Map<String, Object> peer = map(f, "a source");
          assertThat(peer).as("a source").doesNotContainKey("ipBlock");
          peers.add(peer);
        }
      }
    }
    Map<String, Integer> ports = containerPorts();
    assertThat(from.keySet()).as("every port the container and the Services expose has its rule")
        .containsExactlyInAnyOrderElementsOf(ports.values());
    Map<String, Object> corePods = Map.of("podSelector", Map.of("matchLabels", selector));
    assertThat(from.get(ports.get("raft"))).as("the Raft port: the core's pods only").containsExactly(corePods);
    assertThat(from.get(ports.get("client"))).as("the client port: nodes, labelled pods here, labelled namespaces")
        .containsExactlyInAnyOrder(corePods, Map.of("podSelector", Map.of("matchLabels", clientLabel)),
            Map.of("namespaceSelector", Map.of("matchLabels", clientLabel)));
    assertThat(from.get(ports.get("http"))).as("the HTTP port: the monitoring namespaces")
        .containsExactly(Map.of("namespaceSelector", Map.of("matchLabels", monitoringLabel)));
    Map<String, Object> adminLabels = mapAt(only(manifests(ADMIN), "Pod"), "metadata.labels");
    assertThat(adminLabels).as("the admin pod is let through to the client port").containsAllEntriesOf(clientLabel);
  }

  @Test
  void theProbesAskTheHttpPortForPathsTheNodeServes() throws Exception {
    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    Map<String, String> expected = Map.of("startupProbe", "/healthz", "livenessProbe", "/healthz", "readinessProbe", "/readyz");
    StatusHttpServer http = StatusHttpServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), List::of);
    try {
      HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
      for (Map.Entry<String, String> probe : expected.entrySet()) {
        Map<String, Object> get = mapAt(container, probe.getKey() + ".httpGet");
        assertThat(containerPort(get.get("port"))).as("%s's port = --http-port", probe.getKey()).isEqualTo(line.httpPort);
        assertThat(get.get("path")).as("%s's path", probe.getKey()).isEqualTo(probe.getValue());
      }
      for (String path : List.of("/healthz", "/readyz", "/no-such-path")) {
        int status = client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http.port() + path)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.discarding())
            .statusCode();
        if (path.equals("/no-such-path")) {
          assertThat(status).as("the node's answer to a path it does not serve").isEqualTo(404);
        } else {
          assertThat(status).as("the node's answer to %s", path).isNotEqualTo(404);
        }
      }
    } finally {
      http.close();
    }
  }

  @Test
  void theDisruptionBudgetKeepsAMajorityOfTheNodesAndTheMembershipIsTheReplicas() throws Exception {
    int replicas = intAt(statefulSet, "spec.replicas");
    Map<String, Object> labels = mapAt(statefulSet, "spec.template.metadata.labels");
    assertThat(labels).as("pod labels, against the StatefulSet's selector").containsAllEntriesOf(mapAt(statefulSet, "spec.selector.matchLabels"));
    assertThat(str(statefulSet, "spec.podManagementPolicy"))
        .as("all nodes start together: none is ready before a majority runs").isEqualTo("Parallel");

    Map<String, Object> pdb = only(core, "PodDisruptionBudget");
    Map<String, Object> selector = mapAt(pdb, "spec.selector.matchLabels");
    assertThat(selector).as("the budget's selector").isNotEmpty();
    assertThat(labels).as("pod labels, against the budget's selector").containsAllEntriesOf(selector);
    int maxUnavailable = intAt(pdb, "spec.maxUnavailable");
    assertThat(maxUnavailable).isEqualTo(1);
    assertThat(replicas - maxUnavailable).as("nodes left with the budget used up: a majority").isGreaterThan(replicas / 2);

    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    assertThat(line.config.peers()).as("--peers: one per replica").hasSize(replicas);
  }

  @Test
  void thePodRunsAsTheImagesUserWithoutPrivilegesAndItsMemoryFitsTheHeap() throws Exception {
    Dockerfile image = dockerfile();
    Map<String, Object> pod = mapAt(podSpec, "securityContext");
    assertThat(pod.get("runAsNonRoot")).isEqualTo(true);
    assertThat(pod.get("runAsUser")).as("runAsUser = the image's USER").isEqualTo(image.uid).isNotEqualTo(0);
    assertThat(pod.get("runAsGroup")).as("runAsGroup = the image's USER's group").isEqualTo(image.gid);
    Map<String, Object> own = mapAt(container, "securityContext");
    assertThat(own.get("allowPrivilegeEscalation")).isEqualTo(false);
    assertThat(listAt(own, "capabilities.drop")).containsExactly("ALL");

    String account = str(podSpec, "serviceAccountName");
    Map<String, Object> sa = named(all(core, "ServiceAccount"), account);
    assertThat(sa.get("automountServiceAccountToken")).as("the core calls no Kubernetes API").isEqualTo(false);
    assertThat(podSpec.get("automountServiceAccountToken")).isEqualTo(false);

    ServerLine line = runEntrypoint(str(statefulSet, "metadata.name") + "-0", null).serverLine();
    assertThat(line.jar).as("the jar java runs = the jar the image holds").isEqualTo(image.jar);
    long heap = jvmBytes(line.jvmOptions, "-Xmx");
    long direct = jvmBytes(line.jvmOptions, "-XX:MaxDirectMemorySize=");
    long limit = quantity(str(container, "resources.limits.memory"));
    assertThat(quantity(str(container, "resources.requests.memory"))).as("memory request = limit").isEqualTo(limit);
    assertThat(heap + direct + (256L << 20)).as("heap + direct memory + 256 MiB for the rest, within the limit %s", limit)
        .isLessThanOrEqualTo(limit);
    assertThat(line.jvmOptions).contains("-XX:+ExitOnOutOfMemoryError");
    assertThat(mapAt(container, "resources.requests")).containsKey("cpu");
  }

  @Test
  void theApplicationsRoleGrantsWhatTheKubernetesBackendCalls() throws IOException {
    List<Map<String, Object>> rbac = manifests(APP_RBAC);
    assertThat(rbac).extracting(d -> d.get("kind")).containsExactlyInAnyOrder("ServiceAccount", "Role", "RoleBinding");
    Map<String, Object> role = only(rbac, "Role");
    Set<Object> verbs = new HashSet<>();
    for (Object r : listAt(role, "rules")) {
      Map<String, Object> rule = map(r, "a rule");
      assertThat(listAt(rule, "apiGroups")).containsExactly("coordination.k8s.io");
      assertThat(listAt(rule, "resources")).containsExactly("leases");
      verbs.addAll(listAt(rule, "verbs"));
    }
    // get, create, update: LeaseApi (a finalizer removed is an update); watch: backend.observe().
    assertThat(verbs).contains("get", "create", "update", "watch").doesNotContain("delete", "*");
    Map<String, Object> binding = only(rbac, "RoleBinding");
    assertThat(mapAt(binding, "roleRef")).containsEntry("kind", "Role").containsEntry("name", str(role, "metadata.name"));
    for (Object s : listAt(binding, "subjects")) {
      Map<String, Object> subject = map(s, "a subject");
      assertThat(subject).containsEntry("kind", "ServiceAccount");
      named(all(rbac, "ServiceAccount"), (String) subject.get("name"));
    }
  }

  // ---- the entrypoint, run as the pod runs it

  /** What one run of the entrypoint did: its exit status, stderr, java's arguments, names resolved. */
  private record Entrypoint(int status, String err, List<String> javaArgs, List<String> resolved, Path root) {
    ServerLine serverLine() {
      assertThat(status).as("entrypoint's exit status; stderr: %s", err).isZero();
      return ServerLine.parse(javaArgs, root);
    }
  }

  /** The command line java got: its options, the jar, and {@code leasehold server} as it reads its flags. */
  private record ServerLine(
      List<String> jvmOptions, String jar, NodeConfig config, Integer httpPort, String dataDir, Map<String, String> tlsFiles) {

    /** The flags that name TLS files, which config() requires to be there. */
    static final List<String> TLS_FLAGS = List.of("--tls-cert", "--tls-key", "--tls-ca");

    /**
     * @param javaArgs java's arguments, paths as the container sees them
     * @param root where the container's Secrets are mounted in this test, for the checks of
     *     config() that the TLS files are readable
     */
    static ServerLine parse(List<String> javaArgs, Path root) {
      int jar = javaArgs.indexOf("-jar");
      assertThat(jar).as("java's arguments %s", javaArgs).isNotNegative();
      List<String> leasehold = new ArrayList<>(javaArgs.subList(jar + 2, javaArgs.size()));
      assertThat(leasehold).as("the command").first().isEqualTo("server");
      Map<String, String> tlsFiles = new LinkedHashMap<>();
      for (int i = 0; i < leasehold.size() - 1; i++) {
        if (TLS_FLAGS.contains(leasehold.get(i))) {
          assertThat(tlsFiles.put(leasehold.get(i), leasehold.get(i + 1))).as("%s twice", leasehold.get(i)).isNull();
          leasehold.set(i + 1, root + leasehold.get(i + 1));
        }
      }
      // Every flag the container passes is one `leasehold server` accepts: an unknown or
      // malformed one fails here with picocli's message, a bad value in config().
      ParseResult parsed = Main.commandLine().parseArgs(leasehold.toArray(String[]::new)).subcommand();
      ServerCommand server = (ServerCommand) parsed.commandSpec().userObject();
      NodeConfig config = server.config();
      Integer httpPort = parsed.matchedOptionValue("--http-port", null);
      assertThat(httpPort).as("--http-port (the probes need it)").isNotNull();
      String dataDir = config.dataDir().toString();
      return new ServerLine(javaArgs.subList(0, jar), javaArgs.get(jar + 1), config, httpPort, dataDir, tlsFiles);
    }
  }

  /** Where the container's file system is rooted in this test: only the data directory is there. */
  private Path containerRoot() {
    return tmp.resolve("container");
  }

  private Path dataDirOnDisk() {
    return containerRoot().resolve(envValue("LEASEHOLD_DATA_DIR").substring(1));
  }

  /**
   * Runs the container's command for pod {@code pod}, with the ConfigMap leasehold-bootstrap
   * holding {@code bootstrap} (null: no such ConfigMap).
   */
  private Entrypoint runEntrypoint(String pod, String bootstrap) throws IOException, InterruptedException {
    return runEntrypoint(pod, bootstrap, Map.of());
  }

  /**
   * Runs the container's command as {@link #runEntrypoint(String, String)} does, with the
   * environment variables in {@code overrides} replaced (a null value: removed).
   */
  private Entrypoint runEntrypoint(String pod, String bootstrap, Map<String, String> overrides)
      throws IOException, InterruptedException {
    Path bin = Files.createDirectories(tmp.resolve("bin"));
    Path javaOut = tmp.resolve("java.out");
    Path resolved = tmp.resolve("getent.out");
    Files.deleteIfExists(javaOut);
    Files.deleteIfExists(resolved);
    executable(bin.resolve("java"), "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '" + javaOut + "'\n");
    executable(bin.resolve("getent"), "#!/bin/sh\necho \"$2\" >> '" + resolved + "'\necho \"10.1.2.3 $2\"\n");

    Map<String, String> env = podEnvironment(pod, bootstrap);
    // The data directory, an absolute path in the container, lies under this test's directory;
    // so do the Secrets' mounts (mountSecrets), and the TLS directory with them.
    env.put("LEASEHOLD_DATA_DIR", containerRoot() + env.get("LEASEHOLD_DATA_DIR"));
    if (env.containsKey("LEASEHOLD_TLS_DIR")) {
      env.put("LEASEHOLD_TLS_DIR", containerRoot() + env.get("LEASEHOLD_TLS_DIR"));
    }
    for (Map.Entry<String, String> o : overrides.entrySet()) {
      if (o.getValue() == null) {
        env.remove(o.getKey());
      } else {
        env.put(o.getKey(), o.getValue());
      }
    }
    mountSecrets();
    List<String> command = new ArrayList<>();
    for (Object part : listAt(container, "command")) {
      command.add(expand(String.valueOf(part), env));
    }
    for (Object part : listAt(container, "args")) {
      command.add(expand(String.valueOf(part), env));
    }
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectOutput(tmp.resolve("stdout").toFile())
        .redirectError(tmp.resolve("stderr").toFile());
    builder.environment().clear();
    builder.environment().putAll(env);
    builder.environment().put("PATH", bin + ":/usr/bin:/bin");
    Process process = builder.start();
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).as("the entrypoint ends (stub java)").isTrue();

    List<String> javaArgs = Files.exists(javaOut) ? Files.readAllLines(javaOut) : List.of();
    List<String> javaArgsInContainer = new ArrayList<>();
    for (String a : javaArgs) {
      javaArgsInContainer.add(a.startsWith(containerRoot().toString()) ? a.substring(containerRoot().toString().length()) : a);
    }
    return new Entrypoint(
        process.exitValue(),
        Files.readString(tmp.resolve("stderr")),
        javaArgsInContainer,
        Files.exists(resolved) ? Files.readAllLines(resolved) : List.of(),
        containerRoot());
  }

  /**
   * Mounts every Secret volume of the container as the kubelet does, under {@link #containerRoot}:
   * one file per key of {@link #secretKeys} in the mount's directory (placeholders: config()
   * checks that the files are there, the node reads them only when it starts).
   */
  private void mountSecrets() throws IOException {
    for (Object m : listAt(container, "volumeMounts")) {
      Map<String, Object> mount = map(m, "a volume mount");
      Map<String, Object> volume = volume(str(mount, "name"));
      if (!volume.containsKey("secret")) {
        continue;
      }
      Path dir = containerRoot().resolve(str(mount, "mountPath").substring(1));
      if (Files.isDirectory(dir)) {
        try (Stream<Path> old = Files.list(dir)) {
          for (Path f : old.toList()) {
            Files.delete(f);
          }
        }
      }
      Files.createDirectories(dir);
      for (String key : secretKeys) {
        Files.writeString(dir.resolve(key), "placeholder " + key + "\n");
      }
    }
  }

  /** {@return the container's mount of a Secret volume at exactly {@code dir}}; fails if there is none */
  private Map<String, Object> secretMountAt(String dir) {
    for (Object m : listAt(container, "volumeMounts")) {
      Map<String, Object> mount = map(m, "a volume mount");
      if (Path.of(str(mount, "mountPath")).equals(Path.of(dir))) {
        assertThat(volume(str(mount, "name"))).as("the volume mounted at %s", dir).containsKey("secret");
        return mount;
      }
    }
    return fail("no volume is mounted at " + dir + ", where the TLS flags name files");
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (PosixFilePermission p : PosixFilePermission.values()) {
      if ((mode & (1 << (8 - p.ordinal()))) != 0) {
        set.add(p);
      }
    }
    return set;
  }

  /**
   * {@return why the node would refuse a key file of these permissions, or null}: the node's own
   * check, {@code SecretFiles.problem} (package-private in leasehold-spi), called by reflection,
   * since a file owned by root cannot be made here.
   */
  private static String ownerOnlyProblem(Set<PosixFilePermission> permissions, boolean ownedByRoot, Path file)
      throws ReflectiveOperationException {
    Method problem = SecretFiles.class.getDeclaredMethod("problem", Set.class, boolean.class, Path.class);
    problem.setAccessible(true);
    return (String) problem.invoke(null, permissions, ownedByRoot, file);
  }

  /** {@return the pod's volume named {@code name}} */
  private Map<String, Object> volume(String name) {
    for (Object v : listAt(podSpec, "volumes")) {
      Map<String, Object> volume = map(v, "a volume");
      if (name.equals(volume.get("name"))) {
        return volume;
      }
    }
    for (Object t : listAt(statefulSet, "spec.volumeClaimTemplates")) {
      Map<String, Object> claim = map(t, "a volumeClaimTemplate");
      if (name.equals(str(claim, "metadata.name"))) {
        return Map.of("name", name, "persistentVolumeClaim", claim);
      }
    }
    return fail("the container mounts volume " + name + ", which the pod does not have");
  }

  /** The container's environment as the kubelet makes it for {@code pod}. */
  private Map<String, String> podEnvironment(String pod, String bootstrap) {
    Map<String, String> env = new LinkedHashMap<>();
    for (Object e : listAt(container, "env")) {
      Map<String, Object> var = map(e, "an env entry");
      String name = str(var, "name");
      if (var.containsKey("value")) {
        env.put(name, expand(String.valueOf(var.get("value")), env));
        continue;
      }
      Map<String, Object> from = mapAt(var, "valueFrom");
      if (from.containsKey("fieldRef")) {
        String field = str(from, "fieldRef.fieldPath");
        switch (field) {
          case "metadata.name" -> env.put(name, pod);
          case "metadata.namespace" -> env.put(name, namespace);
          default -> fail("env " + name + ": fieldRef " + field + " is not simulated here");
        }
      } else if (from.containsKey("configMapKeyRef")) {
        Map<String, Object> ref = mapAt(from, "configMapKeyRef");
        assertThat(ref).as("env %s", name).containsEntry("name", BOOTSTRAP_CONFIG_MAP).containsEntry("key", "bootstrap")
            .as("env %s: the pods start without the ConfigMap", name).containsEntry("optional", true);
        if (bootstrap != null) {
          env.put(name, bootstrap);
        }
      } else {
        fail("env " + name + ": " + from.keySet() + " is not simulated here");
      }
    }
    return env;
  }

  private String envValue(String name) {
    for (Object e : listAt(container, "env")) {
      Map<String, Object> var = map(e, "an env entry");
      if (name.equals(var.get("name"))) {
        return str(var, "value");
      }
    }
    return fail("no env " + name);
  }

  private static final Pattern REFERENCE = Pattern.compile("\\$\\$|\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");

  /** Kubernetes' own expansion of command, args and env values: $(NAME) if defined, $$ to $. */
  private static String expand(String s, Map<String, String> env) {
    Matcher m = REFERENCE.matcher(s);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String name = m.group(1);
      String value = name == null ? "$" : env.getOrDefault(name, m.group());
      m.appendReplacement(out, Matcher.quoteReplacement(value));
    }
    m.appendTail(out);
    return out.toString();
  }

  private static void executable(Path file, String text) throws IOException {
    Files.writeString(file, text);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  // ---- the pod's ports and mounts

  private Map<String, Integer> containerPorts() {
    Map<String, Integer> ports = new HashMap<>();
    for (Object p : listAt(container, "ports")) {
      Map<String, Object> port = map(p, "a container port");
      assertThat(ports.put(str(port, "name"), intAt(port, "containerPort"))).as("port %s twice", port.get("name")).isNull();
    }
    return ports;
  }

  /** A Service's targetPort or a probe's port, by name or number, as the container's port number. */
  private int containerPort(Object portOrName) {
    if (portOrName instanceof Integer n) {
      return n;
    }
    Integer n = containerPorts().get(String.valueOf(portOrName));
    assertThat(n).as("a container port named %s", portOrName).isNotNull();
    return n;
  }

  private List<Integer> targets(Map<String, Object> service) {
    List<Integer> targets = new ArrayList<>();
    for (Object p : listAt(service, "spec.ports")) {
      targets.add(containerPort(map(p, "a Service port").get("targetPort")));
    }
    return targets;
  }

  /** {@return the writable volume mount that holds {@code path}}; fails if none does */
  private Map<String, Object> mountOf(String path) {
    Map<String, Object> best = null;
    for (Object m : listAt(container, "volumeMounts")) {
      Map<String, Object> mount = map(m, "a volume mount");
      Path at = Path.of(str(mount, "mountPath"));
      if (Path.of(path).startsWith(at) && !Boolean.TRUE.equals(mount.get("readOnly"))
          && (best == null || at.getNameCount() > Path.of((String) best.get("mountPath")).getNameCount())) {
        best = mount;
      }
    }
    if (best == null) {
      return fail(path + " is on the read-only root file system: no writable volume is mounted there");
    }
    return best;
  }

  // ---- the image

  private record Dockerfile(String jar, int uid, int gid) {}

  private static Dockerfile dockerfile() throws IOException {
    String jar = null;
    Integer uid = null;
    Integer gid = null;
    String entrypoint = null;
    for (String line : Files.readAllLines(DOCKERFILE)) {
      String[] words = line.trim().split("\\s+");
      switch (words[0].toUpperCase(Locale.ROOT)) {
        case "COPY" -> {
          assertThat(words).as("COPY of the jar: %s", line).hasSize(3);
          assertThat(words[1]).isEqualTo("leasehold.jar");
          jar = words[2];
        }
        case "USER" -> {
          assertThat(words[1]).as("USER must be numeric uid:gid, so runAsNonRoot can check it").matches("[0-9]+:[0-9]+");
          uid = Integer.parseInt(words[1].split(":")[0]);
          gid = Integer.parseInt(words[1].split(":")[1]);
        }
        case "ENTRYPOINT" -> entrypoint = line;
        default -> { }
      }
    }
    assertThat(jar).as("the Dockerfile's COPY").isNotNull();
    assertThat(uid).as("the Dockerfile's USER").isNotNull();
    assertThat(entrypoint).as("the Dockerfile's ENTRYPOINT").contains("\"" + jar + "\"");
    return new Dockerfile(jar, uid, gid);
  }

  // ---- sizes

  /** {@return a JVM option's size in bytes, e.g. -Xmx1g} */
  private static long jvmBytes(List<String> options, String prefix) {
    for (String o : options) {
      if (o.startsWith(prefix)) {
        Matcher m = Pattern.compile("([0-9]+)([kKmMgG]?)").matcher(o.substring(prefix.length()));
        assertThat(m.matches()).as("size in %s", o).isTrue();
        return Long.parseLong(m.group(1)) << shift(m.group(2).toLowerCase(Locale.ROOT));
      }
    }
    return fail("no JVM option " + prefix + " in " + options);
  }

  /** {@return a Kubernetes quantity of bytes, e.g. 2Gi} */
  private static long quantity(String q) {
    Matcher m = Pattern.compile("([0-9]+)(Ki|Mi|Gi)?").matcher(q);
    assertThat(m.matches()).as("memory quantity %s (whole Ki, Mi or Gi)", q).isTrue();
    return Long.parseLong(m.group(1)) << (m.group(2) == null ? 0 : shift(m.group(2).substring(0, 1).toLowerCase(Locale.ROOT)));
  }

  private static int shift(String unit) {
    return switch (unit) {
      case "" -> 0;
      case "k" -> 10;
      case "m" -> 20;
      case "g" -> 30;
      default -> throw new IllegalArgumentException(unit);
    };
  }

  // ---- YAML

  /** Every document of the manifests in {@code dir}, read as `kubectl apply -f dir` reads them. */
  private static List<Map<String, Object>> manifests(Path dir) throws IOException {
    List<Map<String, Object>> docs = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> listing = Files.list(dir)) {
      files = listing.filter(p -> p.getFileName().toString().matches(".*\\.(yaml|yml|json)")).sorted().toList();
    }
    assertThat(files).as("manifests in %s", dir).isNotEmpty();
    for (Path file : files) {
      for (Object doc : new Yaml().loadAll(Files.readString(file))) {
        if (doc != null) {
          docs.add(map(doc, "a document of " + file));
        }
      }
    }
    return docs;
  }

  private static List<Map<String, Object>> all(List<Map<String, Object>> docs, String kind) {
    return docs.stream().filter(d -> kind.equals(d.get("kind"))).toList();
  }

  private static Map<String, Object> only(List<Map<String, Object>> docs, String kind) {
    List<Map<String, Object>> found = all(docs, kind);
    assertThat(found).as("the %s", kind).hasSize(1);
    return found.get(0);
  }

  private static Map<String, Object> named(List<Map<String, Object>> docs, String name) {
    return docs.stream().filter(d -> name.equals(str(d, "metadata.name"))).findFirst()
        .orElseGet(() -> fail("no object named " + name + " among " + docs.stream().map(d -> d.get("kind") + " " + str(d, "metadata.name")).toList()));
  }

  private static Object at(Map<String, Object> root, String path) {
    Object node = root;
    for (String key : path.split("\\.")) {
      Map<String, Object> m = map(node, path);
      if (!m.containsKey(key)) {
        return fail("no " + path + " (missing " + key + ") in " + root.getOrDefault("kind", "") + " " + root.get("metadata"));
      }
      node = m.get(key);
    }
    return node;
  }

  private static Map<String, Object> mapAt(Map<String, Object> root, String path) {
    return map(at(root, path), path);
  }

  private static List<Object> listAt(Map<String, Object> root, String path) {
    Object node = at(root, path);
    assertThat(node).as(path).isInstanceOf(List.class);
    @SuppressWarnings("unchecked")
    List<Object> list = (List<Object>) node;
    return list;
  }

  private static String str(Map<String, Object> root, String path) {
    Object node = at(root, path);
    assertThat(node).as(path).isInstanceOf(String.class);
    return (String) node;
  }

  private static int intAt(Map<String, Object> root, String path) {
    Object node = at(root, path);
    assertThat(node).as(path).isInstanceOf(Integer.class);
    return (Integer) node;
  }

  private static Map<String, Object> map(Object node, String what) {
    assertThat(node).as(what).isInstanceOf(Map.class);
    @SuppressWarnings("unchecked")
    Map<String, Object> m = (Map<String, Object>) node;
    return m;
  }
}
