import torch as t
from torch.autograd import Variable as V
# volatile
# 节省显存提高效用的参数volatile，也会作用于依赖路径全部的Variable上，且优先级高于requires_grad，
# 这样我们在实际设计网络时不必修改其他叶子结点的requires_grad属性，只要将输入叶子volatile=True即可
x = V(t.ones(1),volatile=True)
w = V(t.rand(1),requires_grad=True)
y = w.mul(x)
print(x.requires_grad,w.requires_grad,y.requires_grad)
print(x.volatile,w.volatile,y.volatile)
