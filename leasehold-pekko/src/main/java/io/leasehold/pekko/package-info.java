/**
 * Leasehold as the lease behind Apache Pekko's Cluster Singleton and Cluster Sharding: {@link
 * io.leasehold.pekko.LeaseholdLease} is a Pekko {@code scaladsl.Lease} that Pekko's {@code
 * LeaseProvider} loads from configuration ({@code lease-class}), backed by any Leasehold backend
 * URI. Java code gets the same lease through Pekko's {@code javadsl.LeaseProvider}, and the
 * Leasehold side of it (fencing token, remaining time) through {@link
 * io.leasehold.pekko.LeaseholdPekko#lease(String)}.
 */
package io.leasehold.pekko;
