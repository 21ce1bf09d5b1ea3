package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A block that only holds parameters and children, for tests that call {@code Optimizer.update} themselves: it
 * names parameters the way DJL does, and its forward pass is never run.
 */
public final class ParamBlock extends AbstractBlock {

    /**
     * Adds a parameter holding {@code array}.
     *
     * @param name  the parameter's name
     * @param array its value
     * @return this block
     */
    public ParamBlock param(String name, NDArray array) {
        addParameter(Parameter.builder().setName(name).setType(Parameter.Type.WEIGHT).optArray(array).build());
        return this;
    }

    /**
     * Adds a frozen parameter holding {@code array}.
     *
     * @param name  the parameter's name
     * @param array its value
     * @return this block
     */
    public ParamBlock frozen(String name, NDArray array) {
        addParameter(Parameter.builder().setName(name).setType(Parameter.Type.WEIGHT).optArray(array)
                .optRequiresGrad(false).build());
        return this;
    }

    /**
     * Adds a parameter that has a shape but no array yet, as before {@code trainer.initialize}.
     *
     * @param name  the parameter's name
     * @param shape its shape
     * @return this block
     */
    public ParamBlock uninitialized(String name, Shape shape) {
        addParameter(Parameter.builder().setName(name).setType(Parameter.Type.WEIGHT).optShape(shape).build());
        return this;
    }

    /**
     * Adds a child block, which DJL names {@code "%02d" + name}.
     *
     * @param name  the child's name
     * @param block the child
     * @return this block
     */
    public ParamBlock child(String name, Block block) {
        addChildBlock(name, block);
        return this;
    }

    @Override
    protected NDList forwardInternal(ParameterStore store, NDList inputs, boolean training,
                                     PairList<String, Object> params) {
        throw new UnsupportedOperationException("a parameter holder only");
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        throw new UnsupportedOperationException("a parameter holder only");
    }
}
