/**
 * Fencing, for the protected resource: {@link io.leasehold.recipes.fencing.FencingGuard} rejects a
 * write whose fencing token is below the highest it has seen, with a {@link
 * io.leasehold.recipes.fencing.StaleTokenException}. See docs/recipes.md.
 */
package io.leasehold.recipes.fencing;
