/**
 * Row kernels of the data path, each a Vector API implementation with a plain scalar twin that
 * tests hold it equal to.
 */
@NullMarked
package moe.a2a.kernels;

import org.jspecify.annotations.NullMarked;
