import torch as t
from torch.autograd import Variable as V
x = V(t.ones(1))
w = V(t.rand(1),requires_grad=True)
b = V(t.rand(1),requires_grad=True)
y = w.mul(x)   #((<AccumulateGrad object at 0x000002A2F57F5630>, 0), (None, 0)) ：(w,x)
z = y.add(b)  #((<MulBackward1 object at 0x000002A2F57F57B8>, 0), (<AccumulateGrad object at 0x000002A2F57F57F0>, 0)) : (y,b)
print(x.is_leaf,w.is_leaf,b.is_leaf,y.is_leaf,z.is_leaf)
print(x.requires_grad,w.requires_grad,b.requires_grad,y.requires_grad,z.requires_grad)
print(x.grad_fn,w.grad_fn,b.grad_fn,y.grad_fn,z.grad_fn)
# grad_fn.next_functions
# grad_fn.next_functions代表了本节点的输入节点信息，grad_fn表示了本节点的输出信息
# 叶子结点grad_fn为None，没有next_functions，但是间接查询到AccumulateGrad object表示该叶子节点
# 接受梯度更新，查询到None表示不接受更新
print(y.grad_fn.next_functions,z.grad_fn.next_functions)
print(z.grad_fn.next_functions[0][0]==y.grad_fn)
print(z.grad_fn.next_functions[0][0],y.grad_fn)
