package moe.a2a.control.security;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.health.v1.HealthGrpc;

/**
 * Lets a call through only with {@code authorization: Bearer TOKEN} naming a token of the port's
 * role: a missing, malformed or unknown token gets UNAUTHENTICATED, a token of the other role
 * PERMISSION_DENIED. Health stays open, so that orchestrators probe without a token. Stateless
 * apart from the token file.
 */
public final class BearerAuth implements ServerInterceptor {
    static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    static final String BEARER = "Bearer ";

    private final TokenFile tokens;
    private final Role required;
    private final String port;

    /**
     * @param port what the refusals call the port, e.g. "the client port"
     */
    public BearerAuth(TokenFile tokens, Role required, String port) {
        this.tokens = tokens;
        this.required = required;
        this.port = port;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (HealthGrpc.SERVICE_NAME.equals(call.getMethodDescriptor().getServiceName())) {
            return next.startCall(call, headers);
        }
        Status refusal = refusal(headers.get(AUTHORIZATION));
        if (refusal != null) {
            call.close(refusal, new Metadata());
            return new ServerCall.Listener<>() {};
        }
        return next.startCall(call, headers);
    }

    private Status refusal(String header) {
        String expected = " (expected: \"Bearer TOKEN\" with a " + required.label() + " token)";
        if (header == null) {
            return Status.UNAUTHENTICATED.withDescription("authorization: missing" + expected);
        }
        if (!header.startsWith(BEARER)) {
            return Status.UNAUTHENTICATED.withDescription(
                    "authorization: not a bearer token" + expected);
        }
        Role role = tokens.roleOf(header.substring(BEARER.length()).strip());
        if (role == null) {
            return Status.UNAUTHENTICATED.withDescription(
                    "authorization: unknown token" + expected);
        }
        if (role != required) {
            return Status.PERMISSION_DENIED.withDescription(
                    "authorization: a "
                            + role.label()
                            + " token on "
                            + port
                            + " (expected: a "
                            + required.label()
                            + " token)");
        }
        return null;
    }
}
