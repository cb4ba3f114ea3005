package moe.a2a.protocol;

import com.google.protobuf.ByteString;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.GroupShrink;
import moe.a2a.comm.ParentGroup;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.NcclParent;
import moe.a2a.v1.PrepareGroup;

/**
 * A group's formation as ClusterService carries it (PrepareGroup, Bound, FormGroup) and as a data
 * plane takes it ({@link GroupEpoch}, {@link PlaneBinding}, {@link GroupPeers}), on the worker's
 * side of its session.
 */
public final class PlaneCodec {
    private PlaneCodec() {}

    /** {@code prepare}'s epoch as {@code rank} of {@code worldSize}. */
    public static GroupEpoch epoch(PrepareGroup prepare, int rank, int worldSize) {
        return new GroupEpoch(
                prepare.getEpoch(),
                rank,
                worldSize,
                prepare.getGroupId(),
                TimeUnit.MILLISECONDS.toNanos(prepare.getExchangeTimeoutMs()));
    }

    /** The Bound of {@code epoch} that tells the control plane {@code binding}. */
    public static Bound bound(long epoch, PlaneBinding binding) {
        Bound.Builder bound =
                Bound.newBuilder()
                        .setEpoch(epoch)
                        .setDataAddress(binding.address())
                        .setNcclUniqueId(ByteString.copyFrom(binding.groupToken()));
        ParentGroup parent = binding.parent();
        if (parent != null) {
            bound.setNcclParent(
                    NcclParent.newBuilder()
                            .setEpoch(parent.epoch())
                            .setGroupId(parent.groupId())
                            .setRank(parent.rank())
                            .setSize(parent.size()));
        }
        return bound.build();
    }

    /** The peers {@code form} gives: their addresses, the group's token or the parent to shrink. */
    public static GroupPeers peers(FormGroup form) {
        return new GroupPeers(
                form.getEpoch(),
                form.getPeersList(),
                form.getNcclUniqueId().toByteArray(),
                form.hasNcclShrink()
                        ? new GroupShrink(
                                form.getNcclShrink().getParentEpoch(),
                                form.getNcclShrink().getExcludedRanksList().stream()
                                        .mapToInt(r -> r)
                                        .toArray())
                        : null);
    }
}
