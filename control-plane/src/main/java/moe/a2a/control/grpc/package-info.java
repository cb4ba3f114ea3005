/** The gRPC edge: request validation, MoeService, status mapping and the server. */
package moe.a2a.control.grpc;
