"""Standard networks as layer lists, with the shapes of their reference implementations.

ImageNet models take 3x224x224 images and follow torchvision (AlexNet without dropout,
VGG-16 without batch norm, ResNet-18/50 v1.5 with the stride on the 3x3 convolution);
ResNet-56 is the CIFAR-10 network of He et al. (2016), 3x32x32 images, three stages of nine
basic blocks and parameter-free ("option A") shortcuts; ``mlp`` is the 2-layer network of the
background articles (N, D, H = 64, 1000, 100) with an L2 loss.

Published multiply-accumulates per image and parameters, checked by the tests:

| model | GMACs | params | source |
|---|---|---|---|
| alexnet | 0.71 | 61.1 M | torchvision model docs ("GFLOPS" column counts MACs) |
| vgg16 | 15.47 | 138.4 M | torchvision model docs |
| resnet18 | 1.81 | 11.7 M | torchvision model docs |
| resnet50 | 4.09 | 25.6 M | torchvision model docs; He et al. 2016 quote 3.8 G (v1) |
| resnet56 | 0.125 | 0.85 M | Li et al., "Pruning Filters for Efficient ConvNets" (2017), Table 1 |
"""

from __future__ import annotations

from parsim.base.caching import cached
from parsim.workloads.net import Layer, NetBuilder, Shape

IMAGENET: Shape = (3, 224, 224)
CIFAR: Shape = (3, 32, 32)


def mlp(d_in: int = 1000, hidden: int = 100, d_out: int = 1000) -> list[Layer]:
    """Linear -> ReLU -> Linear with an L2 (sum of squares) loss."""
    net = NetBuilder((d_in,))
    net.linear("fc1", hidden).relu("relu").linear("fc2", d_out).loss("mse")
    return net.layers


def alexnet() -> list[Layer]:
    net = NetBuilder(IMAGENET)
    net.conv("features.0", 64, 11, 4, 2, bias=True).relu("features.1").maxpool("features.2", 3, 2)
    net.conv("features.3", 192, 5, 1, 2, bias=True).relu("features.4").maxpool("features.5", 3, 2)
    net.conv("features.6", 384, 3, 1, 1, bias=True).relu("features.7")
    net.conv("features.8", 256, 3, 1, 1, bias=True).relu("features.9")
    net.conv("features.10", 256, 3, 1, 1, bias=True).relu("features.11").maxpool("features.12", 3, 2)
    net.linear("classifier.1", 4096).relu("classifier.2")
    net.linear("classifier.4", 4096).relu("classifier.5")
    net.linear("classifier.6", 1000).loss()
    return net.layers


def vgg16() -> list[Layer]:
    net = NetBuilder(IMAGENET)
    index = 0
    for block in ([64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]):
        for channels in block:
            net.conv(f"features.{index}", channels, 3, 1, 1, bias=True).relu(f"features.{index + 1}")
            index += 2
        net.maxpool(f"features.{index}", 2, 2)
        index += 1
    net.linear("classifier.0", 4096).relu("classifier.1")
    net.linear("classifier.3", 4096).relu("classifier.4")
    net.linear("classifier.6", 1000).loss()
    return net.layers


def _basic_block(net: NetBuilder, name: str, channels: int, stride: int, shortcut_conv: bool) -> None:
    block_input = net.shape
    net.conv(f"{name}.conv1", channels, 3, stride, 1).bn(f"{name}.bn1").relu(f"{name}.relu1")
    net.conv(f"{name}.conv2", channels, 3, 1, 1).bn(f"{name}.bn2")
    main = net.shape
    if shortcut_conv:
        net.branch(block_input).conv(f"{name}.downsample.0", channels, 1, stride).bn(f"{name}.downsample.1")
    net.branch(main).add(f"{name}.add").relu(f"{name}.relu2")


def _bottleneck(net: NetBuilder, name: str, width: int, stride: int, shortcut_conv: bool) -> None:
    block_input = net.shape
    net.conv(f"{name}.conv1", width, 1).bn(f"{name}.bn1").relu(f"{name}.relu1")
    net.conv(f"{name}.conv2", width, 3, stride, 1).bn(f"{name}.bn2").relu(f"{name}.relu2")
    net.conv(f"{name}.conv3", width * 4, 1).bn(f"{name}.bn3")
    main = net.shape
    if shortcut_conv:
        net.branch(block_input).conv(f"{name}.downsample.0", width * 4, 1, stride).bn(f"{name}.downsample.1")
    net.branch(main).add(f"{name}.add").relu(f"{name}.relu3")


def _imagenet_resnet(blocks: list[int], bottleneck: bool) -> list[Layer]:
    net = NetBuilder(IMAGENET)
    net.conv("conv1", 64, 7, 2, 3).bn("bn1").relu("relu").maxpool("maxpool", 3, 2, 1)
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True), start=1):
        for index in range(count):
            stride = 2 if stage > 1 and index == 0 else 1
            name = f"layer{stage}.{index}"
            if bottleneck:
                _bottleneck(net, name, width, stride, shortcut_conv=index == 0)
            else:
                _basic_block(net, name, width, stride, shortcut_conv=index == 0 and stage > 1)
    net.global_avgpool("avgpool").linear("fc", 1000).loss()
    return net.layers


def resnet18() -> list[Layer]:
    return _imagenet_resnet([2, 2, 2, 2], bottleneck=False)


def resnet50() -> list[Layer]:
    return _imagenet_resnet([3, 4, 6, 3], bottleneck=True)


def resnet56() -> list[Layer]:
    """CIFAR-10 ResNet-56: 6n + 2 layers with n = 9; shortcuts pad channels (no parameters)."""
    net = NetBuilder(CIFAR)
    net.conv("conv1", 16, 3, 1, 1).bn("bn1").relu("relu")
    for stage, channels in enumerate((16, 32, 64), start=1):
        for index in range(9):
            stride = 2 if stage > 1 and index == 0 else 1
            _basic_block(net, f"layer{stage}.{index}", channels, stride, shortcut_conv=False)
    net.global_avgpool("avgpool").linear("fc", 10).loss()
    return net.layers


MODELS = {
    "mlp": mlp,
    "alexnet": alexnet,
    "vgg16": vgg16,
    "resnet18": resnet18,
    "resnet50": resnet50,
    "resnet56": resnet56,
}


@cached(maxsize=16)
def model_layers(name: str) -> tuple[Layer, ...]:
    """The layers of ``MODELS[name]``, built once and shared by every step of that model (frozen
    layers: ResNet-50's 175 took a sixteenth of its step's build, each time)."""
    return tuple(MODELS[name]())
