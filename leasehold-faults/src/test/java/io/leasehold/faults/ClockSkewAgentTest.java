package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Ticker;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The clock agent: its constant-pool patch redirects both a direct call and a method reference to
 * {@code System.nanoTime()}, leaves other classes alone, and a child JVM started with the harness's
 * options adopts the rate the harness sets.
 */
@Timeout(60)
@Tag("integration")
class ClockSkewAgentTest {

  /** What the patch is tried on. */
  public static final class Sample {
    public static long direct() {
      return System.nanoTime();
    }

    public static LongSupplier reference() {
      return System::nanoTime;
    }

    public static long millis() {
      return System.currentTimeMillis();
    }
  }

  /** A class without a nanoTime call. */
  public static final class Plain {
    public static long millis() {
      return System.currentTimeMillis();
    }
  }

  @AfterEach
  void realClockAgain() {
    SkewedClock.set(System.nanoTime(), 1.0);
  }

  private static byte[] bytes(Class<?> c) throws IOException {
    try (InputStream in = c.getResourceAsStream(c.getName().substring(c.getName().lastIndexOf('.') + 1) + ".class")) {
      return in.readAllBytes();
    }
  }

  /** Defines the patched class in a loader of its own (child-first for that one name). */
  private static Class<?> define(Class<?> original, byte[] patched) {
    ClassLoader loader = new ClassLoader(ClockSkewAgentTest.class.getClassLoader()) {
      @Override
      protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (name.equals(original.getName())) {
          synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            return c != null ? c : defineClass(name, patched, 0, patched.length);
          }
        }
        return super.loadClass(name, resolve);
      }
    };
    try {
      return loader.loadClass(original.getName());
    } catch (ClassNotFoundException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void directCallsAndMethodReferencesReadTheSkewedClock() throws Exception {
    byte[] patched = ClockSkewAgent.redirectNanoTime(bytes(Sample.class));
    assertThat(patched).isNotNull();
    Class<?> c = define(Sample.class, patched);
    SkewedClock.set(42, 0.0); // a clock that stands still at 42
    assertThat((long) c.getMethod("direct").invoke(null)).isEqualTo(42);
    assertThat(((LongSupplier) c.getMethod("reference").invoke(null)).getAsLong()).isEqualTo(42);
    assertThat((long) c.getMethod("millis").invoke(null)).isNotEqualTo(42);
    assertThat(Sample.direct()).isNotEqualTo(42); // the unpatched class reads the real clock
  }

  @Test
  void aClassWithoutNanoTimeIsLeftAlone() throws Exception {
    assertThat(ClockSkewAgent.redirectNanoTime(bytes(Plain.class))).isNull();
  }

  @Test
  void aRateChangeKeepsTheClockContinuous() {
    SkewedClock.set(1_000_000_000L, 1.0);
    long before = SkewedClock.nanoTime();
    SkewedClock.setRate(0.5);
    long after = SkewedClock.nanoTime();
    SkewedClock.setRate(2.0);
    long later = SkewedClock.nanoTime();
    assertThat(after).isGreaterThanOrEqualTo(before);
    assertThat(later).isGreaterThanOrEqualTo(after);
    assertThat(SkewedClock.rate()).isEqualTo(2.0);
  }

  /** A process that reads the lease engine's ticker, then answers "rate" with its clock's rate. */
  public static final class Probe {
    public static void main(String[] args) throws IOException {
      Ticker.system().read(); // SystemTicker loaded, so patched
      System.out.println("ready");
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        System.out.println(SkewedClock.rate());
        System.out.flush();
      }
    }
  }

  @Test
  void aChildJvmWithTheAgentAdoptsTheRateTheHarnessSets(@TempDir Path dir) throws Exception {
    Clocks clocks = new Clocks(dir);
    List<String> cmd = new ArrayList<>(List.of(Children.java()));
    cmd.addAll(clocks.jvmOptions("p1", Clocks.LEASEHOLD));
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Probe.class.getName()));
    Process p = new ProcessBuilder(cmd).redirectError(dir.resolve("p1.err").toFile()).start();
    try (PrintWriter stdin = new PrintWriter(p.outputWriter(StandardCharsets.UTF_8), true);
        BufferedReader stdout = p.inputReader(StandardCharsets.UTF_8)) {
      assertThat(stdout.readLine()).isEqualTo("ready");
      assertThat(clocks.set("p1", 0.99)).as("the agent acknowledged 0.99 and patched SystemTicker").isTrue();
      stdin.println("rate");
      assertThat(stdout.readLine()).isEqualTo("0.99");
      assertThat(clocks.set("p1", 1.0)).isTrue();
      stdin.println("rate");
      assertThat(stdout.readLine()).isEqualTo("1.0");
    } finally {
      p.destroyForcibly();
      p.waitFor();
    }
    assertThat(Files.readString(dir.resolve("p1.err"))).doesNotContain("cannot");
  }
}
