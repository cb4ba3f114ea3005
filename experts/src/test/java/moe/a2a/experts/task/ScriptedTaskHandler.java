package moe.a2a.experts.task;

import java.nio.charset.StandardCharsets;

/**
 * A handler whose payload says what to do: {@code refuse}, {@code fail}, or anything else, which it
 * answers back with the rank appended.
 */
public final class ScriptedTaskHandler implements RankTaskHandler {
    public static final String KIND = "test.scripted";

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public byte[] run(byte[] payload, RankContext rank) {
        String script = new String(payload, StandardCharsets.UTF_8);
        return switch (script) {
            case "refuse" -> throw new RankTaskRefusedException("scripted: refused");
            case "fail" -> throw new IllegalStateException("scripted: failed");
            default -> (script + "@" + rank.rank()).getBytes(StandardCharsets.UTF_8);
        };
    }
}
