package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The longest election timeout: 1.2 × the shortest (a follower notices a dead leader within twice
 * the longest), but never less than 50 ms above it, so that two candidates stay apart by more than
 * a vote round at the small timeouts tests and fast networks use.
 */
class ElectionTimeoutRangeTest {

  @ParameterizedTest(name = "shortest {0} ms → longest {1} ms")
  @CsvSource({"50, 100", "100, 150", "150, 200", "250, 300", "300, 360", "1000, 1200", "60000, 72000"})
  void theLongestIsAFifthAboveTheShortestAndAtLeast50MsAbove(long shortest, long longest) {
    assertThat(CoreNode.longestElectionTimeoutMs(shortest)).isEqualTo(longest);
  }
}
