package org.streambench.runner;

import java.util.Random;

/** Payload pool and key generator as OMB's workload fields define them. */
final class Payloads {
    private final byte[][] pool;
    private final String[] keys;
    private final Workload.KeyDistributor kd;

    Payloads(Workload w, long seed) {
        Random rnd = new Random(seed);
        if (w.useRandomizedPayloads) {
            pool = new byte[w.randomizedPayloadPoolSize][];
            int randomBytes = (int) Math.round(w.messageSize * w.randomBytesRatio);
            for (int i = 0; i < pool.length; i++) {
                byte[] b = new byte[w.messageSize];
                byte[] r = new byte[randomBytes];
                rnd.nextBytes(r);
                System.arraycopy(r, 0, b, 0, randomBytes); // the rest stays zero, as OMB
                pool[i] = b;
            }
        } else {
            pool = new byte[][]{w.payload};
        }
        kd = w.keyDistributor;
        keys = new String[10_000];
        String alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (int i = 0; i < keys.length; i++) {
            char[] c = new char[7];
            for (int j = 0; j < c.length; j++) c[j] = alphabet.charAt(rnd.nextInt(alphabet.length()));
            keys[i] = new String(c);
        }
    }

    byte[] template(long i) { return pool[(int) (i % pool.length)]; }

    String key(long i) {
        switch (kd) {
            case KEY_ROUND_ROBIN: return keys[(int) (i % keys.length)];
            case RANDOM_NANO: return keys[(int) ((System.nanoTime() & Long.MAX_VALUE) % keys.length)];
            default: return null;
        }
    }
}
