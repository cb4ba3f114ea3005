/**
 * Codecs between the protos and the project's types, shared by the coordinator, the gRPC edge and
 * the workers: tensors, step and bench tasks, placements, routing traces. Imports no other moe-a2a
 * control package.
 */
@NullMarked
package moe.a2a.protocol;

import org.jspecify.annotations.NullMarked;
