/**
 * The gated coordinator: {@link io.leasehold.recipes.gated.GatedExecutor} runs irreversible steps
 * ({@link io.leasehold.recipes.gated.GatedStep}) only while a lease is held, and rejects what is
 * pending with a {@link io.leasehold.recipes.gated.LeaseNotHeldException} once it is lost. See
 * docs/recipes.md.
 */
package io.leasehold.recipes.gated;
