/** Routing math and the dispatch/combine data path that every rank runs. */
@NullMarked
package moe.a2a.dispatch;

import org.jspecify.annotations.NullMarked;
