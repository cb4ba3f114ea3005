package moe.a2a.cli;

import java.awt.Color;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import moe.a2a.bench.BenchReport;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.LookupPaintScale;
import org.jfree.chart.renderer.xy.XYBlockRenderer;
import org.jfree.chart.title.PaintScaleLegend;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.DefaultXYZDataset;

/**
 * The PNG charts of {@code bench --plots DIR}, drawn by JFreeChart: exchange latency per workload
 * and phase, each workload's rank×rank traffic matrix, and its tokens per expert.
 */
final class BenchPlots {
    private static final int WIDTH = 1000;
    private static final int HEIGHT = 560;

    private BenchPlots() {}

    static void write(Path dir, List<BenchReport> reports) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(dir);
        latency(dir.resolve("latency.png"), reports);
        for (BenchReport r : reports) {
            if (r.transport().equals(reports.get(0).transport())) {
                traffic(dir.resolve("traffic-" + r.workload().name() + ".png"), r.workload());
                experts(dir.resolve("experts-" + r.workload().name() + ".png"), r.workload());
            }
        }
    }

    /** p50 and p90 of dispatch and combine, one group of bars per workload × transport. */
    private static void latency(Path file, List<BenchReport> reports) throws IOException {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (BenchReport r : reports) {
            String key = r.workload().name() + " / " + r.transport();
            data.addValue(r.dispatchP50Us() / 1000, "dispatch p50", key);
            data.addValue(r.dispatchP90Us() / 1000, "dispatch p90", key);
            data.addValue(r.combineP50Us() / 1000, "combine p50", key);
            data.addValue(r.combineP90Us() / 1000, "combine p90", key);
        }
        JFreeChart chart =
                ChartFactory.createBarChart(
                        "Exchange latency per phase (slowest rank per iteration)",
                        "workload / transport",
                        "ms",
                        data,
                        PlotOrientation.VERTICAL,
                        true,
                        false,
                        false);
        save(file, chart);
    }

    /** rows[src][dst]: tokens each source sends to each destination (dedup), as a heatmap. */
    private static void traffic(Path file, BenchWorkload w) throws IOException {
        int[][] rows = BenchRouting.rows(w);
        int n = w.worldSize();
        double[][] xyz = new double[3][n * n];
        double max = 1;
        for (int src = 0; src < n; src++) {
            for (int dst = 0; dst < n; dst++) {
                int i = src * n + dst;
                xyz[0][i] = dst;
                xyz[1][i] = src;
                xyz[2][i] = rows[src][dst];
                max = Math.max(max, rows[src][dst]);
            }
        }
        DefaultXYZDataset data = new DefaultXYZDataset();
        data.addSeries("rows", xyz);
        NumberAxis x = new NumberAxis("destination rank");
        NumberAxis y = new NumberAxis("source rank");
        x.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
        y.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
        x.setRange(-0.5, n - 0.5);
        y.setRange(-0.5, n - 0.5);
        XYBlockRenderer renderer = new XYBlockRenderer();
        LookupPaintScale scale = new LookupPaintScale(0, max + 1, Color.WHITE);
        for (int step = 0; step <= 32; step++) {
            // white for no traffic, deepening to navy for the busiest pair
            float f = step / 32f;
            scale.add(max * f, new Color(1 - 0.9f * f, 1 - 0.85f * f, 1 - 0.5f * f));
        }
        renderer.setPaintScale(scale);
        XYPlot plot = new XYPlot(data, x, y, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        JFreeChart chart =
                new JFreeChart(
                        "Tokens sent src → dst, "
                                + w.name()
                                + " (fingerprint "
                                + BenchRouting.fingerprint(rows)
                                + ")",
                        plot);
        chart.removeLegend();
        PaintScaleLegend legend = new PaintScaleLegend(scale, new NumberAxis("tokens"));
        legend.setPosition(RectangleEdge.RIGHT);
        chart.addSubtitle(legend);
        save(file, chart);
    }

    /** Token×k assignments per expert over all source ranks: the skew of the routing. */
    private static void experts(Path file, BenchWorkload w) throws IOException {
        long[] perExpert = new long[w.experts()];
        for (int src = 0; src < w.worldSize(); src++) {
            for (int e : BenchRouting.topkIds(w, src)) {
                perExpert[e]++;
            }
        }
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (int e = 0; e < perExpert.length; e++) {
            data.addValue(perExpert[e], "tokens", Integer.valueOf(e));
        }
        JFreeChart chart =
                ChartFactory.createBarChart(
                        "Tokens per expert, "
                                + w.name()
                                + " ("
                                + w.routing()
                                + "; experts "
                                + w.experts() / w.worldSize()
                                + " per rank)",
                        "expert",
                        "token×k assignments",
                        data,
                        PlotOrientation.VERTICAL,
                        false,
                        false,
                        false);
        chart.getCategoryPlot().getDomainAxis().setTickLabelsVisible(false);
        save(file, chart);
    }

    private static void save(Path file, JFreeChart chart) throws IOException {
        ChartUtils.saveChartAsPNG(new File(file.toString()), chart, WIDTH, HEIGHT);
    }
}
