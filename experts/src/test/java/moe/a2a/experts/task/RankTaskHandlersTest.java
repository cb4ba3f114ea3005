package moe.a2a.experts.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import moe.a2a.comm.local.LocalGroup;
import org.junit.jupiter.api.Test;

class RankTaskHandlersTest {
    final LocalGroup group = new LocalGroup(2);

    @Test
    void shouldRunTheHandlerOfTheKindWhenInstalled() {
        byte[] answer = RankTaskHandlers.installed().run(task("hello"), context(1));

        assertThat(new String(answer, StandardCharsets.UTF_8)).isEqualTo("hello@1");
        assertThat(group.isBroken()).isFalse();
    }

    @Test
    void shouldNameTheKindWhenNoHandlerRunsIt() {
        assertThatThrownBy(
                        () ->
                                RankTaskHandlers.installed()
                                        .run(new RankTask("test.missing", new byte[0]), context(0)))
                .isInstanceOf(RankTaskRefusedException.class)
                .hasMessageStartingWith("rank task: unknown kind test.missing (expected: one of [")
                .hasMessageContaining(ScriptedTaskHandler.KIND);
        assertThat(group.isBroken()).isFalse();
    }

    @Test
    void shouldKeepTheGroupWhenTheHandlerRefuses() {
        assertThatThrownBy(() -> RankTaskHandlers.installed().run(task("refuse"), context(0)))
                .isInstanceOf(RankTaskRefusedException.class)
                .hasMessage("scripted: refused");
        assertThat(group.isBroken()).isFalse();
    }

    @Test
    void shouldAbortTheGroupWhenTheHandlerFails() {
        assertThatThrownBy(() -> RankTaskHandlers.installed().run(task("fail"), context(0)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("scripted: failed");
        assertThat(group.isBroken()).isTrue();
    }

    private static RankTask task(String script) {
        return new RankTask(ScriptedTaskHandler.KIND, script.getBytes(StandardCharsets.UTF_8));
    }

    private RankContext context(int rank) {
        return new FlatRankContext(rank, group.size(), group.communicator(rank));
    }
}
