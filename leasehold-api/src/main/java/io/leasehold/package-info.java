/**
 * The Leasehold lease contract: {@link io.leasehold.Lease}, its {@link io.leasehold.LeaseSettings},
 * and {@link io.leasehold.LeaseBackend}, which opens a store by URI and makes leases.
 *
 * <p>Start with {@link io.leasehold.Lease}: it states what each operation promises, the time-safety
 * rule every backend keeps, and what {@link io.leasehold.Lease#checkAlive()} does not promise.
 */
package io.leasehold;
