package io.leasehold.faults;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Optional;

/**
 * A replicated store that the harness runs as child processes on loopback and the nemesis hits:
 * the core ({@link Cluster}), etcd ({@link EtcdCluster}) or ZooKeeper ({@link ZooKeeperCluster}).
 * Members are numbered {@code 0..size()-1}; clients reach member {@code j} at {@link
 * #clientAddress(int)} through links of their own.
 */
interface StoreCluster extends AutoCloseable {

  /** {@return "core", "etcd" or "zookeeper"} */
  String kind();

  /** {@return how many members} */
  int size();

  /** {@return member {@code j}'s name in histories, e.g. n1, e1, z1} */
  String name(int j);

  /** Starts every member; returns without waiting for a leader. */
  void start();

  /** {@return the member that leads now, if one can be found} */
  Optional<Integer> leader();

  /** {@return whether member {@code j} answers and serves (so the next fault may come)} */
  boolean answers(int j);

  /** {@return member j's process, or null while it is killed} */
  Process process(int j);

  /** SIGKILL of member {@code j}; waits until it is gone. */
  void kill(int j);

  /** Starts member {@code j} again on its data, unless it runs. */
  void restart(int j);

  /** {@return whether the members' traffic among themselves runs through links the nemesis can cut} */
  boolean canIsolate();

  /** Cuts member {@code j} off from the other members, both ways (its clients' links stay). */
  void cutPeers(int j);

  /** Undoes {@link #cutPeers(int)}. */
  void healPeers(int j);

  /** Heals every link among the members. */
  void healAll();

  /** {@return whether the members are JVMs that run with the clock agent} */
  boolean skewable();

  /** {@return where member {@code j} really listens for clients} */
  InetSocketAddress clientAddress(int j);

  /**
   * The backend URI for a client whose link to member {@code j} listens on {@code 127.0.0.1:ports[j]}.
   *
   * @param linkPorts one per member
   * @param ttlMillis the leases' TTL (ZooKeeper asks for a session timeout to match)
   * @return the URI
   */
  String leaseUri(List<Integer> linkPorts, long ttlMillis);

  /**
   * What an operator does to end a tenure from the outside: deletes lease {@code name}'s record
   * in the store, through the store's own delete (the core's Delete RPC, an etcd key delete, a
   * ZooKeeper znode delete).
   *
   * @param name the lease name
   * @return whether a record was there and is now gone
   * @throws IllegalStateException if the store could not be asked
   */
  boolean deleteLease(String name);

  /** {@return how the members run, one line for the report} */
  String settings();

  @Override
  void close();
}
