package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.file.NoSuchFileException;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/** One line a user can act on, for each kind of failure a command meets; no class names in it. */
class ErrorsTest {

  /** Named like ZooKeeper's, which the CLI recognises by its simple name (no ZooKeeper on the class path). */
  static final class ConnectionLossException extends Exception {
    private static final long serialVersionUID = 1L;

    ConnectionLossException() {
      super("KeeperErrorCode = ConnectionLoss for /leasehold");
    }
  }

  @Test
  void aNameThatDoesNotResolveIsAnUnknownHostWithoutTheWrappersClassNames() {
    // How the Kubernetes client reports a host that does not resolve: Netty's exception, no message.
    Throwable netty = new CompletionException(new RuntimeException(
        "could not read Lease default/g.member.0: " + new UnresolvedAddressException(), new UnresolvedAddressException()));
    assertThat(Errors.describe(netty)).isEqualTo("could not read Lease default/g.member.0 (unknown host)");
    assertThat(Errors.isNetwork(netty)).isTrue();

    Throwable jdk = new RuntimeException("cannot open", new UnknownHostException("nohost.invalid"));
    assertThat(Errors.describe(jdk)).isEqualTo("cannot open (unknown host nohost.invalid)");
  }

  @Test
  void eachNetworkFailureIsSaidInAFewWords() {
    assertThat(Errors.describe(new RuntimeException("no node answered: UNAVAILABLE: io exception",
            new ConnectException("Connection refused"))))
        .isEqualTo("no node answered (connection refused)");
    assertThat(Errors.describe(new RuntimeException("members failed: " + new ConnectionLossException(),
            new ConnectionLossException())))
        .isEqualTo("members failed (connection lost)");
    assertThat(Errors.describe(new RuntimeException("read", new SocketTimeoutException("Read timed out"))))
        .isEqualTo("read (no answer in time)");
  }

  @Test
  void aFileOrAPlainFailureIsNotANetworkOne() {
    assertThat(Errors.describe(new NoSuchFileException("/tmp/x"))).isEqualTo("/tmp/x: no such file or directory");
    assertThat(Errors.isNetwork(new IllegalStateException("lease is closed"))).isFalse();
    assertThat(Errors.describe(new CompletionException(new IllegalStateException("lease is closed"))))
        .isEqualTo("lease is closed");
  }
}
