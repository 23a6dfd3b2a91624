package com.example.reports;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * With {@code example.stop-after} set (CI sets it), checks what a user would look at — a report
 * published by the leader, {@code /actuator/health/leasehold} UP — and stops the application
 * (a graceful stop: the leadership is released, not left to expire). Exit status 0 when both
 * were seen in time, 1 otherwise. Not part of what an application needs.
 */
@Component
public class StopAfter implements ApplicationRunner {

  private final ConfigurableApplicationContext context;
  private final ReportPublisher publisher;
  private final Environment environment;
  private final Duration stopAfter;

  public StopAfter(
      ConfigurableApplicationContext context, ReportPublisher publisher, Environment environment,
      @Value("${example.stop-after}") Duration stopAfter) {
    this.context = context;
    this.publisher = publisher;
    this.environment = environment;
    this.stopAfter = stopAfter;
  }

  @Override
  public void run(ApplicationArguments args) {
    if (stopAfter.isZero()) {
      return;
    }
    Thread stopper = new Thread(this::checkAndStop, "example-stop-after");
    stopper.start();
  }

  private void checkAndStop() {
    long deadline = System.nanoTime() + stopAfter.toNanos();
    String health = "";
    while (System.nanoTime() < deadline && (publisher.published() < 2 || !health.contains("\"UP\""))) {
      health = leaseholdHealth();
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        return;
      }
    }
    boolean ok = publisher.published() >= 2 && health.contains("\"UP\"");
    System.out.println((ok ? "ok: " : "NOT OK: ") + publisher.published() + " reports published as the leader; "
        + "/actuator/health/leasehold answered " + health);
    System.exit(SpringApplication.exit(context, () -> ok ? 0 : 1));
  }

  private String leaseholdHealth() {
    String port = environment.getProperty("local.server.port");
    if (port == null) {
      return "(no web server yet)";
    }
    try {
      HttpResponse<String> response = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health/leasehold")).build(),
          HttpResponse.BodyHandlers.ofString());
      return response.statusCode() + " " + response.body();
    } catch (Exception e) {
      return "(" + e + ")";
    }
  }
}
