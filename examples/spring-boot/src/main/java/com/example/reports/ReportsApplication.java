package com.example.reports;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A service run as several replicas, of which exactly one publishes the reports: the one that
 * holds the lease {@code leader/reports} (application.yaml). Start two with the same {@code
 * LEASEHOLD_BACKEND} and stop the leader: the other takes over at once on a graceful stop, within
 * the TTL on a crash.
 */
@SpringBootApplication
@EnableScheduling
public class ReportsApplication {

  public static void main(String[] args) {
    SpringApplication.run(ReportsApplication.class, args);
  }
}
