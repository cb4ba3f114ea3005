/** The {@code moe-a2a} command line (picocli): serve, client. */
package moe.a2a.cli;
