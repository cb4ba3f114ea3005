/**
 * Micrometer meters of the data plane and the Prometheus scrape endpoint, and the step observations
 * they are fed ({@link moe.a2a.control.metrics.StepListener}).
 */
@NullMarked
package moe.a2a.control.metrics;

import org.jspecify.annotations.NullMarked;
