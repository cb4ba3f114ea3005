package moe.a2a.it;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The serving history a control plane logs: when its group broke, when an epoch started forming and
 * over how many ranks, and when it served. Read from the log's timestamped lines.
 */
final class ServedLog {
    private static final Pattern LINE = Pattern.compile("^(\\S+Z) .*RemoteCluster - (.*)$");
    private static final Pattern JOINED = Pattern.compile("\\(rank (\\d+)\\) joined \\(");
    private static final Pattern FORMING =
            Pattern.compile("forming group: epoch=\\d+, ranks=\\[([0-9, ]*)\\]");

    enum Type {
        BROKEN,
        FORMING_WHOLE,
        FORMING_PART,
        SERVING,
        JOINED
    }

    /** {@code rank} is the rank that joined, -1 for the other events. */
    record Event(Instant at, Type type, int rank) {}

    private final List<Event> events;

    private ServedLog(List<Event> events) {
        this.events = events;
    }

    /** The events of {@code log}, a control plane of {@code worldSize} ranks. */
    static ServedLog parse(String log, int worldSize) {
        List<Event> events = new ArrayList<>();
        for (String line : log.lines().toList()) {
            Matcher m = LINE.matcher(line);
            if (!m.find()) {
                continue;
            }
            Instant at = Instant.parse(m.group(1));
            String what = m.group(2);
            Matcher forming = FORMING.matcher(what);
            Matcher joined = JOINED.matcher(what);
            if (what.startsWith("group broken")) {
                events.add(new Event(at, Type.BROKEN, -1));
            } else if (joined.find()) {
                events.add(new Event(at, Type.JOINED, Integer.parseInt(joined.group(1))));
            } else if (forming.find()) {
                int ranks = forming.group(1).isBlank() ? 0 : forming.group(1).split(",").length;
                Type type = ranks == worldSize ? Type.FORMING_WHOLE : Type.FORMING_PART;
                events.add(new Event(at, type, -1));
            } else if (what.startsWith("serving: epoch=")) {
                events.add(new Event(at, Type.SERVING, -1));
            }
        }
        return new ServedLog(events);
    }

    /**
     * When the whole group has served without a break since: {@code since} itself if it already did
     * then, else the instant it did after; null while it does not serve whole now.
     */
    Instant wholeSince(Instant since) {
        boolean formingWhole = false;
        boolean servingWhole = false;
        Instant from = null;
        for (Event e : events) {
            switch (e.type()) {
                case BROKEN -> servingWhole = false;
                case FORMING_WHOLE -> formingWhole = true;
                case FORMING_PART -> formingWhole = false;
                case SERVING -> {
                    servingWhole = formingWhole;
                    if (servingWhole) {
                        from = e.at();
                    }
                }
                case JOINED -> {}
            }
        }
        if (!servingWhole) {
            return null;
        }
        return from.isBefore(since) ? since : from;
    }

    /** When the group first served; null if it has not. */
    Instant firstServing() {
        return events.stream()
                .filter(e -> e.type() == Type.SERVING)
                .map(Event::at)
                .findFirst()
                .orElse(null);
    }

    /** When a worker took {@code rank} at or after {@code at}; null if none has yet. */
    Instant joinedAfter(int rank, Instant at) {
        for (Event e : events) {
            if (e.type() == Type.JOINED && e.rank() == rank && !e.at().isBefore(at)) {
                return e.at();
            }
        }
        return null;
    }

    /**
     * When the group served again after the first break at or after {@code at} (and before {@code
     * until}); {@code at} itself when it never broke.
     */
    Instant servingAfter(Instant at, Instant until) {
        boolean broken = false;
        for (Event e : events) {
            if (e.at().isBefore(at) || e.at().isAfter(until)) {
                continue;
            }
            if (e.type() == Type.BROKEN) {
                broken = true;
            } else if (broken && e.type() == Type.SERVING) {
                return e.at();
            }
        }
        return broken ? until : at;
    }
}
