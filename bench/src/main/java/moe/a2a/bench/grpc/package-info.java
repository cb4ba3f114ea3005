/** BenchService: the bench on the client port of a serving coordinator. */
@NullMarked
package moe.a2a.bench.grpc;

import org.jspecify.annotations.NullMarked;
