/**
 * Who may call what: bearer tokens with a role ({@code client} or {@code worker}) checked on every
 * call, and TLS material read from files and reloaded when they change, for the gRPC ports and the
 * data plane.
 */
@NullMarked
package moe.a2a.control.security;

import org.jspecify.annotations.NullMarked;
