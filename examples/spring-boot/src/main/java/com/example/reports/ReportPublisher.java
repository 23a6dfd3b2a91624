package com.example.reports;

import io.leasehold.spring.boot.LeaderGrantedEvent;
import io.leasehold.spring.boot.LeaderRevokedEvent;
import io.leasehold.spring.boot.LeaseholdLeaderInitiator;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.context.event.EventListener;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/** The leader-only job: every replica schedules it, only the leader's run does anything. */
@Component
public class ReportPublisher {

  private static final Logger log = LoggerFactory.getLogger(ReportPublisher.class);

  private final LeaseholdLeaderInitiator reports;
  private final AtomicInteger published = new AtomicInteger();

  /** The starter makes one initiator per {@code leasehold.leader-election.<role>} entry. */
  public ReportPublisher(@Qualifier("leaseholdLeaderInitiator-reports") LeaseholdLeaderInitiator reports) {
    this.reports = reports;
  }

  @Scheduled(fixedDelay = 500)
  public void publish() {
    // Local and cheap (no I/O), and never true past the lease's safe deadline.
    if (!reports.isLeader()) {
      return;
    }
    OptionalLong token = reports.getFencingToken();
    if (token.isEmpty()) {
      return; // lost between the two reads
    }
    // Pass the token to what the report is written to, so a late leader's write is refused there.
    int n = published.incrementAndGet();
    log.info("published report {} with fencing token {}", n, token.getAsLong());
  }

  @EventListener
  public void granted(LeaderGrantedEvent e) {
    log.info("this replica leads '{}' (fencing token {})", e.getRole(), e.getFencingToken());
  }

  /** Comes before the lease is released: leader-only work that must stop, stops here. */
  @EventListener
  public void revoked(LeaderRevokedEvent e) {
    log.info("this replica no longer leads '{}' ({})", e.getRole(), e.getWhy());
  }

  /** {@return reports published by this replica} */
  public int published() {
    return published.get();
  }
}
