/** The gRPC edge: request validation, MoeService, status mapping and the server. */
@NullMarked
package moe.a2a.control.grpc;

import org.jspecify.annotations.NullMarked;
