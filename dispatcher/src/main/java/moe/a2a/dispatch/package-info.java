/** Routing math and the dispatch/combine data path that every rank runs. */
package moe.a2a.dispatch;
