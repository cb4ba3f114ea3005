package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import moe.a2a.metrics.StepStatsSnapshot;

/**
 * A request's answer: its rows of the layer output and the stats of the step it rode in.
 *
 * @param output {@code [T, H]} in the request's dtype
 */
public record ForwardOutcome(ByteString output, StepStatsSnapshot step, long queueNs) {}
