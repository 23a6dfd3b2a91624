package io.leasehold.memory;

import io.leasehold.HolderId;
import java.time.Duration;

/**
 * A lease record as the {@link MemoryStore} holds it, for tests and tools to inspect.
 *
 * @param name the lease name
 * @param holder who holds it
 * @param token the fencing token of this tenure
 * @param expiresIn how long the store keeps it without a further renewal
 */
public record StoredLease(String name, HolderId holder, long token, Duration expiresIn) {}
