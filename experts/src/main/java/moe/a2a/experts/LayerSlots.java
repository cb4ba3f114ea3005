package moe.a2a.experts;

import moe.a2a.dispatch.Placement;

/**
 * One layer of the experts a rank hosts: the placement its steps route by, and the weights in each
 * of the rank's slots under it. Built whole (at start, or staged off the rank thread before a
 * placement change) and never changed after.
 *
 * @param loadedBytes the weight bytes loaded to build it; weights kept from the layer it replaces
 *     count nothing
 */
public record LayerSlots(int layer, Placement placement, HeldExpert[] weights, long loadedBytes) {}
