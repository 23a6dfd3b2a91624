package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseSettings;
import io.leasehold.spi.VirtualClock;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's examples. The first program ("Using a lease") is taken from README.md as printed,
 * compiled with the build's own rules (Java 17, every lint warning an error) against this module's
 * test class path, and run: the README cannot show code that does not compile or work.
 */
@Timeout(60)
class ReadmeExampleTest {

  private static final Path README = Path.of("..", "README.md");
  private static final String CLASS = "com.example.orders.OrdersCompactor";

  @TempDir Path dir;

  /** The README's first Java block, as printed. */
  static String firstJavaBlock(String readme) {
    Matcher block = Pattern.compile("(?ms)^```java\\n(.*?)^```$").matcher(readme);
    assertThat(block.find()).as("a ```java block in README.md").isTrue();
    return block.group(1);
  }

  /** Compiles the README's first program and loads its class. */
  private Class<?> compileReadmeProgram() throws IOException, ClassNotFoundException {
    String source = firstJavaBlock(Files.readString(README, StandardCharsets.UTF_8));
    Path file = dir.resolve("src/com/example/orders/OrdersCompactor.java");
    Files.createDirectories(file.getParent());
    Files.writeString(file, source, StandardCharsets.UTF_8);
    Path classes = Files.createDirectories(dir.resolve("classes"));

    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
      boolean compiled =
          javac
              .getTask(
                  null,
                  files,
                  diagnostics,
                  List.of("--release", "17", "-Xlint:all", "-Werror", "-proc:none", "-classpath", classPath, "-d", classes.toString()),
                  null,
                  files.getJavaFileObjects(file))
              .call();
      assertThat(compiled)
          .as("README.md's first Java block compiles as printed:%n%s", diagnostics.getDiagnostics())
          .isTrue();
    }
    URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader());
    return Class.forName(CLASS, true, loader);
  }

  @Test
  void theReadmeProgramCompilesAsPrintedAndRunsOnTheMemoryStore() throws Exception {
    Class<?> program = compileReadmeProgram();
    Method main = program.getMethod("main", String[].class);
    PrintStream stdout = System.out;
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
    try {
      main.invoke(null, (Object) new String[0]);
    } finally {
      System.setOut(stdout);
    }
    assertThat(printed.toString(StandardCharsets.UTF_8)).containsPattern("compacting orders with fencing token \\d+");
  }

  @Test
  void theReadmeProgramsWorkStopsWhenTheLeaseIsLost() throws Exception {
    Method startCompacting = compileReadmeProgram().getDeclaredMethod("startCompacting", Lease.class, ExecutorService.class);
    startCompacting.setAccessible(true);
    ThreadPoolExecutor executor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
    MemoryStore store = MemoryStore.create();
    try (MemoryBackend backend = store.connect();
        Lease lease =
            backend.newLease(
                LeaseSettings.builder("orders-compactor", "node-1").ttl(Duration.ofSeconds(2)).build())) {
      assertThat(startCompacting.invoke(null, lease, executor)).isEqualTo(true);
      await().until(() -> executor.getActiveCount() == 1);

      backend.cutOff(); // renewals fail from now on: the lease is lost at its safe deadline
      await().atMost(Duration.ofSeconds(10)).until(() -> executor.getActiveCount() == 0);
      assertThat(lease.checkAlive()).isFalse();
      backend.heal();
    } finally {
      executor.shutdownNow();
    }
  }

  /** The example of docs/testing.md and of MemoryStore's Javadoc. */
  @Test
  void theVirtualTimeExampleWorksAsDocumented() {
    VirtualClock clock = new VirtualClock();
    MemoryStore store = MemoryStore.create(clock);
    MemoryBackend node1 = store.connect();
    MemoryBackend node2 = store.connect();
    Lease a = node1.newLease(LeaseSettings.builder("jobs", "node-1").build());
    Lease b = node2.newLease(LeaseSettings.builder("jobs", "node-2").build());
    List<String> events = new ArrayList<>();
    a.onLost(lost -> events.add("node-1 lost it"));

    assertThat(a.acquire().join()).isTrue();
    node1.cutOff();
    clock.advance(Duration.ofSeconds(20));
    events.add(b.acquire().join() ? "node-2 acquired it" : "node-2 was refused");

    assertThat(events).containsExactly("node-1 lost it", "node-2 acquired it");
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(1);
  }
}
