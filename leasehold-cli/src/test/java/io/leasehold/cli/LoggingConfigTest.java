package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The libraries underneath log errors only, and the routine noise not at
 * all (an unreachable ZooKeeper: ~190 lines of Curator and ZooKeeper traces; a leader redirect: an
 * ERROR with a 27-line trace); Leasehold's own log stays at INFO.
 */
class LoggingConfigTest {

  private static final String PREFIX = "org.slf4j.simpleLogger.log.";

  @Test
  void thirdPartyLogsAreQuietByDefault() throws Exception {
    Properties p = new Properties();
    try (InputStream in = Main.class.getResourceAsStream("/simplelogger.properties")) {
      p.load(in);
    }

    assertThat(p.getProperty("org.slf4j.simpleLogger.defaultLogLevel")).isEqualTo("error");
    assertThat(p.getProperty(PREFIX + "io.leasehold")).isEqualTo("info");
    for (String quiet :
        new String[] {
          "org.apache.zookeeper",
          "org.apache.curator",
          "org.apache.ratis.client.impl.OrderedAsync",
          "org.apache.ratis.grpc.server.GrpcLogAppender"
        }) {
      assertThat(p.getProperty(PREFIX + quiet)).as(quiet).isEqualTo("off");
    }
  }
}
