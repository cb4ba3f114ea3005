/** Micrometer meters of the data plane and the Prometheus scrape endpoint. */
package moe.a2a.control.metrics;
