/** Not API, not exported: what the recipes of the other packages share (one scheduler thread). */
package io.leasehold.recipes.internal;
