package org.streambench.runner;

/**
 * Received sequence numbers of one producer in one subscription: a sliding bitset whose memory is bounded by
 * the reordering span (lowest missing .. highest received), not by the number of messages.
 * Not thread-safe; callers synchronise.
 */
public final class SeqTracker {
    static final int MAX_WORDS = 1 << 17; // 8 M sequence numbers of reordering span (1 MiB)

    private long[] ring = new long[16];
    private int start;       // ring index of the word holding baseWord
    private long baseWord;   // sequences below baseWord*64 have all been received (or given up on)
    private long unique, duplicated, skipped;

    /** @return true if first delivery, false if duplicate */
    public boolean record(long seq) {
        if (seq < 0) { duplicated++; return false; }
        long w = (seq >>> 6) - baseWord;
        if (w < 0) { duplicated++; return false; }
        while (w >= ring.length) {
            if (ring.length < MAX_WORDS) grow();
            else { dropFirstWord(); w--; }
        }
        int idx = (int) ((start + w) % ring.length);
        long bit = 1L << (seq & 63);
        if ((ring[idx] & bit) != 0) { duplicated++; return false; }
        ring[idx] |= bit;
        unique++;
        while (ring[start] == -1L) {
            ring[start] = 0;
            start = (start + 1) % ring.length;
            baseWord++;
        }
        return true;
    }

    private void grow() {
        long[] n = new long[ring.length * 2];
        for (int i = 0; i < ring.length; i++) n[i] = ring[(start + i) % ring.length];
        ring = n;
        start = 0;
    }

    private void dropFirstWord() {
        skipped += 64 - Long.bitCount(ring[start]);
        ring[start] = 0;
        start = (start + 1) % ring.length;
        baseWord++;
    }

    public long unique() { return unique; }

    public long duplicated() { return duplicated; }

    /** sequences abandoned because the reordering span exceeded the window (counted as missing). */
    public long skipped() { return skipped; }

    /** lowest sequence not yet received */
    public long lowestMissing() {
        long s = baseWord * 64;
        long word = ring[start];
        return s + Long.numberOfTrailingZeros(~word);
    }

    public int wordsAllocated() { return ring.length; }
}
