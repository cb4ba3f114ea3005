/**
 * Micrometer meters of the data plane and the Prometheus scrape endpoint, and the step observations
 * they are fed ({@link moe.a2a.metrics.StepListener}).
 */
@NullMarked
package moe.a2a.metrics;

import org.jspecify.annotations.NullMarked;
