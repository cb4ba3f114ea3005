/**
 * The Java client of moe-a2a: {@link moe.a2a.client.MoeClient} (blocking) and {@link
 * moe.a2a.client.MoeAsyncClient} (futures) with the same calls, built by {@link
 * moe.a2a.client.MoeClients#builder}; {@link moe.a2a.client.Tensors} makes the wire's tensors from
 * {@code float[]}, {@code short[]} (bf16 or fp16 bits) or a {@code ByteBuffer}. Failed calls throw
 * grpc-java's {@code StatusRuntimeException} (its status names the field of a bad request).
 */
@NullMarked
package moe.a2a.client;

import org.jspecify.annotations.NullMarked;
