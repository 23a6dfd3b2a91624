/**
 * The store clusters that {@code leasehold bench compare} starts and measures: a 3-node consistent
 * core, a 3-member etcd and a 3-server ZooKeeper ensemble, each as child processes on loopback
 * ({@link io.leasehold.bench.cluster.ManagedClusters#start}). docs/bench-clusters.md lists their
 * command lines and settings.
 */
package io.leasehold.bench.cluster;
