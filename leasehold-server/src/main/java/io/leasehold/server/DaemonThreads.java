package io.leasehold.server;

import java.util.concurrent.ThreadFactory;

/** Threads of a node's own executors: named for thread dumps, and daemons, so none keeps a JVM alive. */
public final class DaemonThreads {

  private DaemonThreads() {}

  /** {@return a factory of daemon threads called {@code name}} */
  public static ThreadFactory named(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }
}
