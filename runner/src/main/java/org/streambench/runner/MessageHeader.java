package org.streambench.runner;

/**
 * The 32-byte audit header written over the start of every payload (big-endian):
 * int32 magic "SBH1" | int32 producerId | int64 sequence | int64 send time (epoch µs) | int64 intended send time (epoch µs).
 */
public final class MessageHeader {
    public static final int SIZE = 32;
    public static final int MAGIC = 0x53424831;

    private MessageHeader() {}

    public static void write(byte[] b, int producerId, long seq, long sendMicros, long intendedMicros) {
        putInt(b, 0, MAGIC);
        putInt(b, 4, producerId);
        putLong(b, 8, seq);
        putLong(b, 16, sendMicros);
        putLong(b, 24, intendedMicros);
    }

    public static boolean valid(byte[] b) { return b != null && b.length >= SIZE && getInt(b, 0) == MAGIC; }

    public static int producerId(byte[] b) { return getInt(b, 4); }

    public static long sequence(byte[] b) { return getLong(b, 8); }

    public static long sendMicros(byte[] b) { return getLong(b, 16); }

    public static long intendedMicros(byte[] b) { return getLong(b, 24); }

    static void putInt(byte[] b, int o, int v) {
        b[o] = (byte) (v >>> 24); b[o + 1] = (byte) (v >>> 16); b[o + 2] = (byte) (v >>> 8); b[o + 3] = (byte) v;
    }

    static void putLong(byte[] b, int o, long v) {
        putInt(b, o, (int) (v >>> 32));
        putInt(b, o + 4, (int) v);
    }

    static int getInt(byte[] b, int o) {
        return ((b[o] & 0xff) << 24) | ((b[o + 1] & 0xff) << 16) | ((b[o + 2] & 0xff) << 8) | (b[o + 3] & 0xff);
    }

    static long getLong(byte[] b, int o) {
        return ((long) getInt(b, o) << 32) | (getInt(b, o + 4) & 0xffffffffL);
    }
}
