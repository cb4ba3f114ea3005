package moe.a2a.cli;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveReport;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The PNG charts of {@code bench --collective --plots DIR}, drawn by JFreeChart as the workload
 * charts are: per collective, busbw against size (log 2), one line per transport and rank count.
 */
final class CollectivePlots {
    private static final int WIDTH = 1000;
    private static final int HEIGHT = 560;

    private CollectivePlots() {}

    static void write(Path dir, List<CollectiveReport> reports) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(dir);
        for (Collective c : Collective.values()) {
            List<CollectiveReport> mine =
                    reports.stream().filter(r -> r.c().collective() == c).toList();
            if (!mine.isEmpty()) {
                busbw(dir.resolve("busbw-" + c.label() + ".png"), c, mine);
            }
        }
    }

    private static void busbw(Path file, Collective c, List<CollectiveReport> reports)
            throws IOException {
        Map<String, XYSeries> lines = new LinkedHashMap<>();
        for (CollectiveReport r : reports) {
            String key = r.transport().label() + ", N=" + r.c().ranks();
            lines.computeIfAbsent(key, k -> new XYSeries(k, true, true))
                    .addOrUpdate((double) r.c().bytes(), r.busbwGbps());
        }
        XYSeriesCollection data = new XYSeriesCollection();
        lines.values().forEach(data::addSeries);
        LogAxis x = new LogAxis("size (bytes, nccl-tests' meaning)");
        x.setBase(2);
        x.setSmallestValue(1);
        NumberAxis y = new NumberAxis("busbw (GB/s)");
        XYPlot plot = new XYPlot(data, x, y, new XYLineAndShapeRenderer(true, true));
        JFreeChart chart = new JFreeChart(c.label() + ": bus bandwidth against size", plot);
        ChartUtils.saveChartAsPNG(new File(file.toString()), chart, WIDTH, HEIGHT);
    }
}
