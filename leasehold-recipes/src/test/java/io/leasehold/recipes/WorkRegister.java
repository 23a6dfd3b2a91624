package io.leasehold.recipes;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The honest checker for "at no instant do two singletons run their work": each work marks itself
 * on entry and unmarks itself on exit, on its own thread, by compare-and-set on one register. An
 * entry while another work is marked is an overlap, whenever and however it happened.
 */
public final class WorkRegister {

  private final AtomicReference<String> runner = new AtomicReference<>();
  private final Set<String> running = ConcurrentHashMap.newKeySet();
  public final List<String> overlaps = new CopyOnWriteArrayList<>();
  public final List<Long> tokens = new CopyOnWriteArrayList<>();

  public void enter(String who, long token) {
    running.add(who);
    tokens.add(token);
    String other = runner.get();
    if (!runner.compareAndSet(null, who)) {
      overlaps.add(who + " (token " + token + ") started while " + other + " ran");
    }
  }

  public void exit(String who) {
    runner.compareAndSet(who, null);
    running.remove(who);
  }

  public boolean isRunning(String who) {
    return running.contains(who);
  }
}
