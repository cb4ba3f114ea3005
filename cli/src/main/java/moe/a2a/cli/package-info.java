/** The {@code moe-a2a} command line (picocli): serve, client. */
@NullMarked
package moe.a2a.cli;

import org.jspecify.annotations.NullMarked;
