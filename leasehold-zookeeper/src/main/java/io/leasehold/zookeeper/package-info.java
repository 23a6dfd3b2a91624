/**
 * The ZooKeeper backend ({@code zookeeper://}), on Apache Curator: {@link
 * io.leasehold.zookeeper.ZooKeeperBackend}. Open it with {@code LeaseBackend.open(uri)}.
 *
 * <p>This module has no module descriptor: ZooKeeper's own jars split packages ({@code
 * org.apache.zookeeper.server.quorum} and {@code .persistence} are in both {@code zookeeper} and
 * {@code zookeeper-jute}), so they cannot be on the module path. It runs on the class path and
 * names itself {@code io.leasehold.zookeeper} as an automatic module.
 */
package io.leasehold.zookeeper;
