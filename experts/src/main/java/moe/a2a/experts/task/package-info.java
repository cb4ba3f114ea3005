/** Tasks run once on every rank of the serving group, between steps, by kind-named handlers. */
@NullMarked
package moe.a2a.experts.task;

import org.jspecify.annotations.NullMarked;
