package org.streambench.runner;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.DataFormatException;

/** HdrHistogram helpers: µs histograms, 3 significant digits, auto-resizing. */
public final class Histos {
    private Histos() {}

    public static Histogram create() {
        Histogram h = new Histogram(3);
        h.setAutoResize(true);
        return h;
    }

    public static String encode(Histogram h) {
        ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int n = h.encodeIntoCompressedByteBuffer(buf, 9);
        return Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), n));
    }

    public static Histogram decode(String b64) {
        try {
            Histogram h = Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(Base64.getDecoder().decode(b64)), 0);
            h.setAutoResize(true);
            return h;
        } catch (DataFormatException | IllegalArgumentException e) {
            throw new IllegalArgumentException("not an encoded HdrHistogram: " + e.getMessage(), e);
        }
    }

    /** Stats object; divisor 1000 gives ms from µs, 1 keeps µs. */
    public static ObjectNode stats(Histogram h, double divisor) {
        ObjectNode n = Fields.JSON.createObjectNode();
        n.put("count", h.getTotalCount());
        n.put("avg", h.getTotalCount() == 0 ? 0.0 : h.getMean() / divisor);
        n.put("p50", h.getValueAtPercentile(50) / divisor);
        n.put("p75", h.getValueAtPercentile(75) / divisor);
        n.put("p95", h.getValueAtPercentile(95) / divisor);
        n.put("p99", h.getValueAtPercentile(99) / divisor);
        n.put("p99.9", h.getValueAtPercentile(99.9) / divisor);
        n.put("p99.99", h.getValueAtPercentile(99.99) / divisor);
        n.put("max", h.getMaxValue() / divisor);
        return n;
    }

    /** OMB's quantile map: percentiles(100) iteration, percentile level -> valueIteratedTo / divisor. */
    public static Map<Double, Double> quantiles(Histogram h, double divisor) {
        Map<Double, Double> m = new LinkedHashMap<>();
        if (h.getTotalCount() == 0) return m;
        for (HistogramIterationValue v : h.percentiles(100)) m.put(v.getPercentileLevelIteratedTo(), v.getValueIteratedTo() / divisor);
        return m;
    }

    public static Map<Double, Long> quantilesLong(Histogram h) {
        Map<Double, Long> m = new LinkedHashMap<>();
        if (h.getTotalCount() == 0) return m;
        for (HistogramIterationValue v : h.percentiles(100)) m.put(v.getPercentileLevelIteratedTo(), v.getValueIteratedTo());
        return m;
    }
}
