package org.streambench.runner;

import io.pravega.client.stream.ScalingPolicy;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Test helper: the scaling policy the driver gives a stream, without a cluster. */
final class PravegaDriverPolicy {
    private PravegaDriverPolicy() {}

    static void check(DriverConfig d, int partitions, String type, int minSegments) {
        ScalingPolicy p = PravegaDriver.scalingPolicy(d, partitions);
        assertEquals(type, p.getScaleType().name());
        assertEquals(minSegments, p.getMinNumSegments());
    }
}
